import type { ResumePoint } from '../shared/proto.js';
import { WATCH_BACKOFF, type BackoffOptions } from './backoff.js';

/**
 * The account runner's decisions as pure functions: where each watch scope resumes after a (re)connect, which
 * reflectors to start and stop, when the account counts as synced, and how rediscovery requests coalesce.
 * account.ts performs them; these only decide.
 */

/** Loading credentials and first discovery retry like watches, but wait at most a minute between tries. */
export const ACCOUNT_START_BACKOFF: BackoffOptions = { ...WATCH_BACKOFF, maxMs: 60_000 };

/**
 * After a CRD event: discovery serves a new CRD only once it is Established (a status update, hence another event)
 * and the discovery document itself lags a little, so look now-ish and once more later.
 */
export const CRD_REDISCOVERY_DELAYS_MS = [250, 2000] as const;

/** A burst of status changes (403s at startup) within this long becomes one AccountStatus. */
export const STATUS_COALESCE_MS = 500;

export const resumeKey = (account: string, group: string, kind: string, namespace: string): string =>
  `${account}/${group}/${kind}/${namespace}`;

/**
 * Where this account's scopes resume, from the Welcome's (or AccountsUpdateResult's) resume points: the
 * resourceVersions the server has stored, i.e. what it acknowledged. A scope with one watches from there (no
 * relist); a scope without one lists. Other accounts' points, and points without a kind, are not this account's.
 */
export function resumeVersions(account: string, points: ResumePoint[]): Map<string, string> {
  return new Map(
    points
      .filter((p) => p.account === account && p.kind)
      .map((p) => [resumeKey(p.account, p.kind?.group ?? '', p.kind?.kind ?? '', p.namespace), p.resourceVersion]),
  );
}

/** Reflectors to stop (running, no longer wanted) and to start (wanted, not running), each in input order. */
export function planReflectors(
  running: Iterable<string>,
  wanted: Iterable<string>,
): { stop: string[]; start: string[] } {
  const want = new Set(wanted);
  const run = new Set(running);
  return { stop: [...run].filter((id) => !want.has(id)), start: [...want].filter((id) => !run.has(id)) };
}

/** Ready for /readyz: in a session, discovered, and every scope listed (forbidden ones excepted). */
export function accountSynced(
  inSession: boolean,
  state: string,
  scopes: Iterable<{ synced: boolean; state: string }>,
): boolean {
  if (!inSession || state !== 'ready') return false;
  for (const r of scopes) if (!r.synced && r.state !== 'forbidden') return false;
  return true;
}

/** Rediscovery runs one at a time; requests during a run make exactly one more run afterwards. */
export interface RediscoveryState {
  running: boolean;
  again: boolean;
}

export function requestRediscovery(s: RediscoveryState): { state: RediscoveryState; run: boolean } {
  if (s.running) return { state: { running: true, again: true }, run: false };
  return { state: { running: true, again: false }, run: true };
}

export function rediscoveryDone(s: RediscoveryState): { state: RediscoveryState; run: boolean } {
  if (s.again) return { state: { running: true, again: false }, run: true };
  return { state: { running: false, again: false }, run: false };
}
