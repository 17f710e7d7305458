import type { Clock, ClockTimer } from '../shared/clock.js';
import { isForbidden, isGone, isNotFound, KubeApiError } from './kube/client.js';

/**
 * The reflector's decisions as pure functions: which request comes next, and what a request's outcome means
 * (relist, resume, back off, wait out a 403, give up streaming lists). reflector.ts performs them; these
 * functions only decide, so 410 storms, stalls and backoff resets are unit-tested without an API server.
 */

/** The part of a reflector's state its decisions read and write. */
export interface ReflectorLoopState {
  /** Where the watch continues from; undefined means a full list is needed. */
  resourceVersion: string | undefined;
  synced: boolean;
  /** Streaming lists are still worth trying for this scope (not refused, not stalled). */
  streamingLists: boolean;
  /** The last request got 403; the next success is reported as access regained. */
  forbidden: boolean;
  /** 403s in a row (0 after any success). */
  forbiddenStreak: number;
  /** Clock time of the last 410 Gone; undefined before the first. */
  lastGoneAt: number | undefined;
}

/**
 * A reflector's state at start: `resumeFrom` (a resume point the server holds, i.e. what it acknowledged) makes
 * the scope synced and its first request a WATCH from there, with no relist.
 */
export function initialLoopState(resumeFrom: string | undefined, streamingLists: boolean): ReflectorLoopState {
  const resourceVersion = resumeFrom || undefined;
  return {
    resourceVersion,
    synced: resourceVersion !== undefined,
    streamingLists,
    forbidden: false,
    forbiddenStreak: 0,
    lastGoneAt: undefined,
  };
}

export type ReflectorRequest = 'list' | 'streaming-list' | 'watch';

/** A paginated LIST or a streaming list when there is no resourceVersion to resume from, else a WATCH from it. */
export function nextRequest(s: ReflectorLoopState): ReflectorRequest {
  if (s.resourceVersion !== undefined) return 'watch';
  return s.streamingLists ? 'streaming-list' : 'list';
}

/**
 * A scope that was readable and gets 403 backs off (keeping its place) this many times before it is taken for
 * forbidden and left to the slow timer: an API server that just restarted authorizes from RBAC caches it is still
 * filling, and answers 403 for a moment (seen in the fault suite after a SIGKILLed kube-apiserver, for a
 * ServiceAccount; system:masters skips RBAC and never sees it). Without this, one such 403 stopped the kind's
 * watch in that namespace for the slow timer's 10 minutes.
 */
export const TRANSIENT_FORBIDDEN_RETRIES = 5;

/** A second 410 within this long of the previous one is a compaction storm: relist after a backoff, not at once. */
export const GONE_STORM_MS = 2000;
/** A watch that ends normally after this long (or with events) was a real watch; sooner and empty, a failure. */
export const SHORT_WATCH_MS = 1000;

/** What a failed list or watch request failed with, as far as the decisions care. */
export type Failure = 'gone' | 'forbidden' | 'watch-list-refused' | 'not-found' | 'stalled' | 'other';

/** Thrown by a streaming list that ended, or was abandoned by its stall guard, before its initial-events-end. */
export class InitialListIncomplete extends Error {
  constructor(readonly stalled: boolean) {
    super(
      stalled
        ? 'streaming list stalled before its initial-events-end bookmark'
        : 'streaming list ended before its initial-events-end bookmark',
    );
  }
}

export function classifyFailure(e: unknown): Failure {
  if (isGone(e)) return 'gone';
  if (isForbidden(e)) return 'forbidden';
  // The API server refuses sendInitialEvents/resourceVersionMatch on watches when WatchList is off (or too old).
  if (e instanceof KubeApiError && (e.status === 422 || e.status === 400 || e.status === 406)) {
    return 'watch-list-refused';
  }
  if (isNotFound(e)) return 'not-found';
  if (e instanceof InitialListIncomplete && e.stalled) return 'stalled';
  return 'other';
}

export type ReflectorEvent =
  /** A paginated LIST completed (it set the resourceVersion). */
  | { type: 'listed' }
  /** A WATCH (or streaming list) the server ended without an error. */
  | { type: 'watch-ended'; received: number; elapsedMs: number }
  | { type: 'failed'; failure: Failure; at: number };

export type WatchRestartReason = 'gone' | 'error' | 'timeout' | 'stall';

export interface ReflectorStep {
  state: ReflectorLoopState;
  /** Before the next request: none, the backoff's next delay, or the slow 403 retry timer. */
  wait: 'none' | 'backoff' | 'forbidden-retry';
  /** The request worked: the next failure backs off from the base delay again. */
  resetBackoff: boolean;
  /** Counts as a failed request (`failures`). */
  failed: boolean;
  /** Counted in the watch restarts metric by this reason. */
  restart?: WatchRestartReason;
  /** Reported once: access lost (first 403 in a row), access regained, or the resource gone (rediscover). */
  report?: 'forbidden' | 'allowed' | 'not-found';
  /** Why the request counts as failed when no error says so. */
  error?: string;
}

/** The decision after one list or watch request. */
export function nextReflectorStep(s: ReflectorLoopState, event: ReflectorEvent): ReflectorStep {
  if (event.type !== 'failed') {
    const allowed = s.forbidden ? ({ report: 'allowed' } as const) : {};
    const state = { ...s, forbidden: false, forbiddenStreak: 0 };
    if (event.type === 'listed') return { state, wait: 'none', resetBackoff: true, failed: false, ...allowed };
    // A watch the server ends normally (its timeout) is resumed at once; one that ends at once and empty would
    // be a hot loop, so it backs off.
    if (event.received > 0 || event.elapsedMs > SHORT_WATCH_MS) {
      return { state, wait: 'none', resetBackoff: true, failed: false, restart: 'timeout', ...allowed };
    }
    return {
      state,
      wait: 'backoff',
      resetBackoff: false,
      failed: false,
      error: 'watch closed immediately',
      ...allowed,
    };
  }
  const failed = { resetBackoff: false, failed: true } as const;
  switch (event.failure) {
    case 'gone': {
      // Relist at once, unless the previous 410 was moments ago (a compaction storm): then back off too.
      const storm = s.lastGoneAt !== undefined && event.at - s.lastGoneAt < GONE_STORM_MS;
      const state = { ...s, resourceVersion: undefined, lastGoneAt: event.at };
      return { state, wait: storm ? 'backoff' : 'none', restart: 'gone', ...failed };
    }
    case 'forbidden': {
      const forbiddenStreak = s.forbiddenStreak + 1;
      if (s.synced && forbiddenStreak <= TRANSIENT_FORBIDDEN_RETRIES) {
        return { state: { ...s, forbiddenStreak }, wait: 'backoff', restart: 'error', ...failed };
      }
      // Start over with a fresh list when access comes back; nothing of this scope was sent meanwhile.
      return {
        state: { ...s, resourceVersion: undefined, synced: false, forbidden: true, forbiddenStreak },
        wait: 'forbidden-retry',
        ...(s.forbidden ? {} : { report: 'forbidden' as const }),
        ...failed,
      };
    }
    case 'watch-list-refused':
      if (s.resourceVersion === undefined && s.streamingLists) {
        return { state: { ...s, streamingLists: false }, wait: 'none', ...failed };
      }
      break;
    case 'not-found':
      return { state: s, wait: 'backoff', restart: 'error', report: 'not-found', ...failed };
    case 'stalled':
      // A server that stalls one streaming list may do it again: this scope lists with LIST from now on.
      return {
        state: { ...s, resourceVersion: undefined, streamingLists: false },
        wait: 'backoff',
        restart: 'stall',
        ...failed,
      };
    case 'other':
      break;
  }
  return { state: s, wait: 'backoff', restart: 'error', ...failed };
}

/** The server-side timeout of one WATCH, spread over [lo, hi) seconds so watches do not all end together. */
export function watchTimeoutSeconds([lo, hi]: [number, number], random: () => number): number {
  return Math.floor(lo + random() * (hi - lo));
}

/**
 * Abandons a streaming list that delivers nothing for `ms`: armed while the list is being read, re-armed by each
 * chunk, disarmed while the reflector itself holds the stream (send queue full) and once the list is complete.
 */
export class StallGuard {
  fired = false;
  private timer: ClockTimer | undefined;

  constructor(
    private readonly clock: Clock,
    private readonly ms: number,
    private readonly onStall: () => void,
  ) {}

  arm(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.fired = true;
      this.onStall();
    }, this.ms);
  }

  disarm(): void {
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}
