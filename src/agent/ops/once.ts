/**
 * At most once per operation id. The plugin-server may send an operation again under the same id: when the stream
 * dropped before the result came back, a failed-retryable task that Orca resumes (`POST /task/{id}:resume`) runs
 * its operations again with their ids (`<taskId>.<index>`). The first delivery may still have run (an agent frozen
 * past the session idle timeout reads it after SIGCONT), so a repeat must not run again: it gets the first run's
 * result, waiting for it if it is still running. A run that failed is forgotten once it ends: the repeat is the
 * retry, and must run. The memory lives in the process, so it covers stream faults, not an agent restart.
 *
 * The memory is bounded by count and by bytes, and holds each result as `retain` makes it: what is kept for a
 * repeat must own exactly its bytes. A 30-minute soak found the agent's RSS ~110 MB above its start, flat only once
 * 1,000 results were kept: each result's JSON was a small Buffer, a slice of a 64 KiB pool slab (Node's
 * Buffer.poolSize), and keeping the slice kept the whole slab (~64 MB of slabs for ~2 MB of results).
 */
export interface OnceOptions<R> {
  /** Whether a result counts as done (kept), or as a failure to run again on a repeat (forgotten). */
  succeeded(r: R): boolean;
  /** The form kept for repeats (e.g. with its bytes copied out of a shared slab); identity by default. */
  retain?(r: R): R;
  /** Bytes the kept form holds, counted against `maxBytes`. */
  sizeOf?(r: R): number;
  /** Most ids remembered. Default 1,000. */
  capacity?: number;
  /** Most bytes of finished results kept; the oldest finished ones go first. Default 16 MiB. */
  maxBytes?: number;
}

interface Entry<R> {
  result: Promise<R>;
  /** Bytes of the kept result; 0 while it runs (a running operation is never forgotten for bytes). */
  bytes: number;
  done: boolean;
}

export class OnceByOperationId<R> {
  private readonly seen = new Map<string, Entry<R>>();
  private keptBytes = 0;
  private readonly capacity: number;
  private readonly maxBytes: number;

  constructor(private readonly options: OnceOptions<R>) {
    this.capacity = options.capacity ?? 1_000;
    this.maxBytes = options.maxBytes ?? 16 * 1024 * 1024;
  }

  /** Runs `execute` for a new id; for a known one returns the first run's (possibly pending) result. */
  run(id: string, execute: () => Promise<R>): { result: Promise<R>; repeated: boolean } {
    const known = this.seen.get(id);
    if (known) return { result: known.result, repeated: true };
    const result = execute();
    const entry: Entry<R> = { result, bytes: 0, done: false };
    this.seen.set(id, entry);
    const forget = () => {
      if (this.seen.get(id) === entry) this.delete(id, entry);
    };
    result.then((r) => {
      if (this.seen.get(id) !== entry) return;
      if (!this.options.succeeded(r)) return forget();
      const kept = this.options.retain ? this.options.retain(r) : r;
      entry.result = Promise.resolve(kept);
      entry.bytes = this.options.sizeOf?.(kept) ?? 0;
      entry.done = true;
      this.keptBytes += entry.bytes;
      this.evictForBytes();
    }, forget);
    // Oldest first out (Map keeps insertion order).
    while (this.seen.size > this.capacity) {
      const [oldId, old] = this.seen.entries().next().value!;
      this.delete(oldId, old);
    }
    return { result, repeated: false };
  }

  get size(): number {
    return this.seen.size;
  }

  /** Bytes of the finished results kept (as `sizeOf` counts them). */
  get bytes(): number {
    return this.keptBytes;
  }

  private evictForBytes(): void {
    for (const [id, entry] of this.seen) {
      if (this.keptBytes <= this.maxBytes) return;
      if (entry.done) this.delete(id, entry);
    }
  }

  private delete(id: string, entry: Entry<R>): void {
    this.seen.delete(id);
    this.keptBytes -= entry.bytes;
  }
}
