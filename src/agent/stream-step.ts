import type { BackoffOptions } from './backoff.js';
import type { AgentConfig } from './config.js';

/**
 * The stream client's decisions as pure functions: what to do when a stream ends, its reconnect backoff, and when
 * a heartbeat is due. stream.ts performs them (gRPC, timers); these only decide.
 */

export interface StreamEnded {
  /** The agent is stopping. */
  aborted: boolean;
  /** restart() asked for a new stream (the account list changed): not a failure. */
  restartRequested: boolean;
  /** The stream got as far as a Welcome. */
  welcomed: boolean;
}

export interface StreamEndStep {
  next: 'stop' | 'redial-now' | 'backoff';
  /** Counted in the reconnects metric. */
  countReconnect: boolean;
  /** A stream that was welcomed worked: the backoff starts again from its base delay (with the current config). */
  resetBackoff: boolean;
}

export function afterStreamEnd(e: StreamEnded): StreamEndStep {
  if (e.aborted) return { next: 'stop', countReconnect: false, resetBackoff: false };
  if (e.restartRequested) return { next: 'redial-now', countReconnect: false, resetBackoff: false };
  return { next: 'backoff', countReconnect: true, resetBackoff: e.welcomed };
}

/** The reconnect backoff of the server settings (the Armory agent's `clouddriver.backoff`, in seconds). */
export function reconnectBackoff(b: AgentConfig['server']['backoff']): BackoffOptions {
  return {
    baseMs: b.baseDelaySeconds * 1000,
    multiplier: b.multiplier,
    jitter: b.jitter,
    maxMs: b.maxDelaySeconds * 1000,
  };
}

/** The shorter of the agent's and the server's heartbeat intervals (0 = off on that side); undefined: none. */
export function heartbeatIntervalMs(agentSeconds: number, serverSeconds: number): number | undefined {
  const seconds = [agentSeconds, serverSeconds].filter((s) => s > 0);
  return seconds.length === 0 ? undefined : Math.min(...seconds) * 1000;
}

/**
 * Checked every half interval: a heartbeat goes out when nothing was written for 90% of the interval, so the
 * peer sees a message at least once per interval however the checks fall, and never one beside real traffic.
 */
export function heartbeatDue(now: number, lastWrite: number, intervalMs: number): boolean {
  return now - lastWrite >= intervalMs * 0.9;
}
