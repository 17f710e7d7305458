/**
 * Threads that check large batches of incoming objects (check-batch.ts), so the JSON parse of every object — the
 * largest ingest cost — runs beside the event loop that decodes the stream, writes the store and answers REST
 * reads, instead of on it. Batches keep their order in the session (it waits for a batch's answer before writing
 * it); the pool only adds threads. A worker that dies fails the batches it held (their streams close, and their
 * agents resend) and is replaced by the next batch that needs one.
 */
import { Worker } from 'node:worker_threads';
import type { IndexDefinition } from '../cache/store.js';
import type { CheckBatch, CheckBatchResult } from './check-batch.js';
import type { CheckWorkerData } from './check-worker.js';

interface Pending {
  resolve: (r: CheckBatchResult) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  pending: Map<number, Pending>;
}

/** Run from src/ (tests, tsx) the worker is TypeScript and needs tsx's loader; from dist/ it is plain JS. */
function workerUrl(): { url: URL; execArgv: string[] } {
  const fromSource = import.meta.url.endsWith('.ts');
  return {
    url: new URL(fromSource ? './check-worker.ts' : './check-worker.js', import.meta.url),
    execArgv: fromSource ? ['--import', 'tsx'] : [],
  };
}

export class CheckPool {
  private readonly slots: Slot[] = [];
  private next = 0;
  private nextId = 1;
  private closed = false;

  /**
   * Threads start with the first agent stream (warm) or the first batches that need them: a server no agent streams
   * to holds none.
   * `indexes`: the cache's registered indexes, whose keys the threads compute.
   */
  constructor(
    readonly size: number,
    private readonly indexes: readonly IndexDefinition[] = [],
  ) {}

  private spawn(): Slot {
    const { url, execArgv } = workerUrl();
    const workerData: CheckWorkerData = { indexes: this.indexes.map((d) => ({ module: d.module, export: d.export })) };
    const slot: Slot = { worker: new Worker(url, { execArgv, workerData }), pending: new Map() };
    slot.worker.unref();
    slot.worker.on('message', (m: { id: number; crashed?: string } & CheckBatchResult) => {
      const p = slot.pending.get(m.id);
      if (!p) return;
      slot.pending.delete(m.id);
      if (m.crashed !== undefined) p.reject(new Error(`object check failed: ${m.crashed}`));
      else p.resolve({ results: m.results, ...(m.failed ? { failed: m.failed } : {}) });
    });
    const fail = (why: string) => {
      for (const p of slot.pending.values()) p.reject(new Error(`object check worker ${why}`));
      slot.pending.clear();
      // Replaced by the next batch that needs a thread, not here: a worker that cannot start at all (a broken
      // install) then fails the batches that need it, instead of respawning in a loop.
      const at = this.slots.indexOf(slot);
      if (at >= 0) this.slots.splice(at, 1);
    };
    slot.worker.on('error', (e) => fail(`failed: ${e.message}`));
    slot.worker.on('exit', (code) => fail(`exited (${code})`));
    return slot;
  }

  /**
   * Starts the threads now, ahead of the first large batch: an agent stream calls it as it opens, so the threads load
   * while the agent is welcomed and starts its lists. Started by the first batch instead, the batches of an initial
   * sync queued behind a thread's start (about 0.2 s on a loaded 2-core machine, bench/profiles/initial-sync.md).
   */
  warm(): void {
    while (!this.closed && this.slots.length < this.size) this.slots.push(this.spawn());
  }

  /** Threads started (and not dead). */
  get threads(): number {
    return this.slots.length;
  }

  /** Checks a batch on the next worker; its bytes are transferred (the caller must not use them after). */
  check(batch: CheckBatch): Promise<CheckBatchResult> {
    if (this.closed) return Promise.reject(new Error('object check pool is closed'));
    if (this.slots.length < this.size) this.slots.push(this.spawn());
    const slot = this.slots[this.next++ % this.slots.length]!;
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      slot.pending.set(id, { resolve, reject });
      slot.worker.postMessage({ id, batch }, [batch.bytes.buffer as ArrayBuffer]);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.slots.map((s) => s.worker.terminate()));
  }
}
