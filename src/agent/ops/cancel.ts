import { ScaleAgentError } from '../../shared/errors.js';
import type { KubeRequester } from '../kube/client.js';

/**
 * What a Cancel (proto ServerMessage.cancel) does to one operation:
 * - `stop`: none of its writes has gone to the API server, so stopping it changes nothing: it is aborted and answers
 *   failed, not retryable (SA_ERR_CANCELLED);
 * - `run-to-end`: a write has gone out, so stopping now could leave a change half made: it runs to its end and
 *   answers as it ended;
 * - `ignore`: it is not running here (finished, or never arrived).
 */
export type CancelDecision = 'stop' | 'run-to-end' | 'ignore';

export function cancelDecision(op: { running: boolean; writesSent: number }): CancelDecision {
  if (!op.running) return 'ignore';
  return op.writesSent > 0 ? 'run-to-end' : 'stop';
}

/**
 * One running operation's cancel state: its abort signal, and whether a write went out. A write is counted when it
 * is handed to the client, before any byte is sent, and a write is never sent once the signal is aborted: the two
 * happen on the same thread, so a cancel either stops the operation before its first write or lets it finish.
 */
export class CancelPoint {
  private readonly controller = new AbortController();
  private writesSent = 0;
  /** Set when a cancel came after a write went out: the operation ran to its end (for its task history). */
  declined: string | undefined;

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** A cancel for this operation, which is still running. */
  request(reason: string): CancelDecision {
    const decision = cancelDecision({ running: true, writesSent: this.writesSent });
    if (decision === 'stop') {
      this.controller.abort(new ScaleAgentError('CANCELLED', `cancelled before it changed anything: ${reason}`));
    } else {
      this.declined = reason;
    }
    return decision;
  }

  /** The requester with every write (any method but GET) counted, and refused once the operation is cancelled. */
  guard(kube: KubeRequester): KubeRequester {
    return {
      request: (method, path, options) => {
        if (method !== 'GET') {
          if (this.controller.signal.aborted) return Promise.reject(this.controller.signal.reason as Error);
          this.writesSent += 1;
        }
        return kube.request(method, path, options);
      },
      getJson: (path, options) => kube.getJson(path, options),
      getText: (path, options) => kube.getText(path, options),
    };
  }
}

/** The reason of an abort caused by a cancel, if that is what aborted `signal`. */
export function cancelledBy(signal: AbortSignal): ScaleAgentError | undefined {
  const r: unknown = signal.reason;
  return signal.aborted && r instanceof ScaleAgentError && r.kind === 'CANCELLED' ? r : undefined;
}
