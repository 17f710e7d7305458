/**
 * Operations a peer forwarded to this replica (api/peer-routes.ts), by run — an operation id and when its record was
 * queued, since a resumed task's operation is queued anew under the same id — and what a peer's cancel does to them.
 *
 * The sender posts the forward and, when its task is cancelled, the cancel: two HTTP requests that may arrive in
 * either order. A cancel that comes first finds no run; it is kept, and the forward that follows starts already
 * aborted, so it is never sent to the agent. Kept cancels are bounded (the oldest go first): the forward comes within
 * the sender's deadline, long before that many other cancels.
 */

/** Cancels kept for forwards that have not arrived. */
export const EARLY_CANCELS_KEPT = 1000;

export class ForwardedRuns {
  private readonly running = new Map<string, AbortController>();
  private readonly early = new Map<string, string>();

  constructor(private readonly keep = EARLY_CANCELS_KEPT) {}

  /** A forward begins: its abort signal, aborted at once when its cancel came first. `end` when it is over. */
  start(run: string): { signal: AbortSignal; end(): void } {
    const abort = new AbortController();
    this.running.set(run, abort);
    const reason = this.early.get(run);
    if (reason !== undefined) {
      this.early.delete(run);
      abort.abort(reason);
    }
    return {
      signal: abort.signal,
      end: () => {
        if (this.running.get(run) === abort) this.running.delete(run);
      },
    };
  }

  /** A peer's cancel: aborts the run under way ('aborted'), else keeps it for the forward to come ('kept'). */
  cancel(run: string, reason: string): 'aborted' | 'kept' {
    const live = this.running.get(run);
    if (live) {
      live.abort(reason);
      return 'aborted';
    }
    this.early.delete(run); // re-inserted last: the newest is kept longest
    this.early.set(run, reason);
    for (const key of this.early.keys()) {
      if (this.early.size <= this.keep) break;
      this.early.delete(key);
    }
    return 'kept';
  }
}

/** The run of an operation: its id and when its record was queued. */
export function runKey(operationId: string, queuedAt: number): string {
  return `${operationId}@${queuedAt}`;
}
