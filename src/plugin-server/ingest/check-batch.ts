/**
 * One batch of objects to check, as it crosses to a check worker: the objects' bytes in one transferred buffer (no
 * copy on the way), and what each needs besides its text in runs (a batch is mostly one account and kind).
 */
import { noKeys, type IndexDefinition, type IndexOptions } from '../cache/store.js';
import { checkObject, type CheckedObject } from './object-check.js';

export interface CheckBatch {
  bytes: Uint8Array;
  /** Object i is bytes[ends[i-1] .. ends[i]). */
  ends: Uint32Array;
  /** 1 where the change is a deletion. */
  deleted: Uint8Array;
  runs: { count: number; group: string; apiVersion: string; kind: string; options: IndexOptions }[];
}

/** Index i's result; `failed` names the first object that did not pass (the batch is refused as a whole). */
export interface CheckBatchResult {
  results: (CheckedObject | undefined)[];
  failed?: { index: number; error: string };
}

export function checkBatch(b: CheckBatch, indexes: readonly IndexDefinition[]): CheckBatchResult {
  const buf = Buffer.from(b.bytes.buffer, b.bytes.byteOffset, b.bytes.byteLength);
  const results: (CheckedObject | undefined)[] = new Array<CheckedObject | undefined>(b.ends.length);
  let i = 0;
  let start = 0;
  for (const run of b.runs) {
    for (let k = 0; k < run.count; k++, i++) {
      const end = b.ends[i]!;
      if (end === start) continue; // a deletion sent without its object: nothing to check
      const r = checkObject(
        {
          text: buf.toString('utf8', start, end),
          group: run.group,
          apiVersion: run.apiVersion,
          kind: run.kind,
          deleted: b.deleted[i] === 1,
          options: run.options,
        },
        indexes,
      );
      start = end;
      if ('error' in r) return { results, failed: { index: i, error: r.error } };
      // Most objects index nothing and keep their text: nothing to send back for them.
      results[i] = r.json === undefined && noKeys(r.index) ? undefined : r;
    }
  }
  return { results };
}

/** Gathers a batch's objects in order, as the session reads them off the stream. */
export class CheckBatchBuilder {
  private readonly parts: (Buffer | undefined)[] = [];
  private readonly deleted: Uint8Array;
  private readonly runs: CheckBatch['runs'] = [];
  private total = 0;

  constructor(capacity: { length: number }) {
    this.deleted = new Uint8Array(capacity.length);
  }

  add(
    bytes: Buffer | undefined,
    group: string,
    apiVersion: string,
    kind: string,
    deleted: boolean,
    options: IndexOptions,
  ): void {
    if (deleted) this.deleted[this.parts.length] = 1;
    this.parts.push(bytes);
    this.total += bytes?.length ?? 0;
    const last = this.runs.at(-1);
    if (last && last.apiVersion === apiVersion && last.kind === kind && last.options === options) last.count += 1;
    else this.runs.push({ count: 1, group, apiVersion, kind, options });
  }

  /** The batch, its bytes copied once into a buffer of its own (transferred to the worker). */
  build(): CheckBatch {
    const bytes = new Uint8Array(new ArrayBuffer(this.total));
    const ends = new Uint32Array(this.parts.length);
    let at = 0;
    for (let i = 0; i < this.parts.length; i++) {
      const p = this.parts[i];
      if (p) {
        bytes.set(p, at);
        at += p.length;
      }
      ends[i] = at;
    }
    return { bytes, ends, deleted: this.deleted.subarray(0, this.parts.length), runs: this.runs };
  }
}
