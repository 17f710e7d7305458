/**
 * At most once per operation id. The plugin-server may send an operation again under the same id: when the stream
 * dropped before the result came back, a failed-retryable task that Orca resumes (`POST /task/{id}:resume`) runs
 * its operations again with their ids (`<taskId>.<index>`). The first delivery may still have run (an agent frozen
 * past the session idle timeout reads it after SIGCONT), so a repeat must not run again: it gets the first run's
 * result, waiting for it if it is still running. A run that failed is forgotten once it ends: the repeat is the
 * retry, and must run. The memory is bounded and lives in the process, so it covers stream faults, not an agent
 * restart.
 */
export class OnceByOperationId<R> {
  private readonly seen = new Map<string, Promise<R>>();

  constructor(
    /** Whether a result counts as done (kept), or as a failure to run again on a repeat (forgotten). */
    private readonly succeeded: (r: R) => boolean,
    private readonly capacity = 1_000,
  ) {}

  /** Runs `execute` for a new id; for a known one returns the first run's (possibly pending) result. */
  run(id: string, execute: () => Promise<R>): { result: Promise<R>; repeated: boolean } {
    const known = this.seen.get(id);
    if (known) return { result: known, repeated: true };
    const result = execute();
    this.seen.set(id, result);
    const forget = () => {
      if (this.seen.get(id) === result) this.seen.delete(id);
    };
    result.then((r) => (this.succeeded(r) ? undefined : forget()), forget);
    // Oldest first out (Map keeps insertion order).
    while (this.seen.size > this.capacity) this.seen.delete(this.seen.keys().next().value!);
    return { result, repeated: false };
  }

  get size(): number {
    return this.seen.size;
  }
}
