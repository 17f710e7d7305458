import type { Counter } from 'prom-client';
import { Pool } from 'undici';
import { ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import type { FiatConfig } from '../config.js';

/**
 * What this server keeps of Fiat's `GET /authorize/{user}` answer (its UserPermission.View): the accounts it names
 * with their authorizations (READ, WRITE, EXECUTE, CREATE), and whether the user is an admin (every authorization
 * on every account). Fiat names only the accounts the user has some authorization on.
 */
export interface FiatView {
  admin: boolean;
  /** Lower-cased account name → authorizations; Fiat's client compares names ignoring case. */
  accounts: Map<string, Set<string>>;
}

/** Fiat answered 404 ("user not found"): Clouddriver's Fiat client then has no permission, so nothing is allowed. */
export const NO_RIGHTS: FiatView = { admin: false, accounts: new Map() };

export type FiatFailure = 'timeout' | 'connect' | 'status' | 'invalid';

/** Why Fiat gave no usable answer, with the reason the metric counts. */
export class FiatUnavailable extends Error {
  constructor(
    readonly reason: FiatFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'FiatUnavailable';
  }
}

/** A view as fetched, and when. */
export interface CachedView {
  view: FiatView;
  fetchedAtMs: number;
}

/**
 * Whether the cached view of a user must be fetched again before it answers for `wanted` accounts: none yet, past
 * its time, or (a miss) it names none of an account asked about, so an account registered after Fiat answered is
 * seen as soon as Fiat knows it, not a whole cache period later. A miss refreshes at most once per `missRefreshMs`:
 * a user reading an account Fiat never grants them must not turn every read into a call to Fiat.
 */
export function needsFetch(
  entry: CachedView | undefined,
  wanted: readonly string[],
  nowMs: number,
  ttlMs: number,
  missRefreshMs: number,
): boolean {
  if (!entry) return true;
  const age = nowMs - entry.fetchedAtMs;
  if (age >= ttlMs) return true;
  if (age < missRefreshMs || entry.view.admin) return false;
  return wanted.some((a) => !entry.view.accounts.has(a.toLowerCase()));
}

/** The view's rule for one account, as Fiat's FiatPermissionEvaluator applies it for an ACCOUNT resource. */
export function mayRead(view: FiatView, account: string): boolean {
  return view.admin || (view.accounts.get(account.toLowerCase())?.has('READ') ?? false);
}

/** Fiat's UserPermission.View, read leniently (unknown fields ignored); undefined when it is not that shape. */
export function parseFiatView(body: unknown): FiatView | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return undefined;
  const { admin, accounts } = body as { admin?: unknown; accounts?: unknown };
  if (accounts !== undefined && accounts !== null && !Array.isArray(accounts)) return undefined;
  const out = new Map<string, Set<string>>();
  for (const a of (accounts as unknown[] | null | undefined) ?? []) {
    const { name, authorizations } = (a ?? {}) as { name?: unknown; authorizations?: unknown };
    if (typeof name !== 'string' || name === '') continue;
    const granted = Array.isArray(authorizations)
      ? authorizations.filter((x): x is string => typeof x === 'string').map((x) => x.toUpperCase())
      : [];
    const key = name.toLowerCase();
    out.set(key, new Set([...(out.get(key) ?? []), ...granted]));
  }
  return { admin: admin === true, accounts: out };
}

export interface FiatPermissionsDeps {
  /** scale_agent_fiat_errors_total, by reason. */
  errors: Counter<'reason'>;
  log: Logger;
  now?: () => number;
}

/** The most users whose views are kept (Fiat's own client keeps 1,000); the oldest is dropped first. */
const MAX_USERS = 1000;

/**
 * A Fiat client as Clouddriver has one (fiat-api's FiatPermissionEvaluator): the user's whole permission view from
 * Fiat's API, kept per user for `cacheSeconds`, fetched once however many requests ask at the same moment.
 * Fiat down, or answering nonsense, is an error (fail closed), never an empty or a full view.
 */
export class FiatPermissions {
  readonly baseUrl: string;
  private readonly pool: Pool;
  private readonly prefix: string;
  private readonly views = new Map<string, CachedView>();
  private readonly inFlight = new Map<string, Promise<CachedView>>();
  private readonly now: () => number;

  constructor(
    private readonly config: FiatConfig,
    private readonly deps: FiatPermissionsDeps,
  ) {
    const url = new URL(config.baseUrl);
    this.baseUrl = config.baseUrl;
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connect: { timeout: config.timeoutMs },
      headersTimeout: config.timeoutMs,
      bodyTimeout: config.timeoutMs,
    });
    this.now = deps.now ?? Date.now;
  }

  /**
   * The user's view, fresh enough to answer for `wanted` (see needsFetch). When a refresh on a miss fails while the
   * cached view is still within its time, that view answers (it is as good as it was a moment ago); past its time
   * there is no view, and the caller gets 503.
   */
  async viewOf(user: string, wanted: readonly string[]): Promise<FiatView> {
    const entry = this.views.get(user);
    const now = this.now();
    const ttlMs = this.config.cacheSeconds * 1000;
    if (!needsFetch(entry, wanted, now, ttlMs, this.config.missRefreshSeconds * 1000)) return entry!.view;
    try {
      return (await this.fetchOnce(user)).view;
    } catch (e) {
      if (entry && this.now() - entry.fetchedAtMs < ttlMs) return entry.view;
      const reason = e instanceof FiatUnavailable ? e.message : String(e);
      throw new ScaleAgentError(
        'UNAVAILABLE',
        `Fiat (${this.baseUrl}) did not answer for user ${user}: ${reason}; reads of agent accounts are refused until it does`,
        { cause: e },
      );
    }
  }

  /** Forgets every cached view (tests, and an operator's config reload). */
  clear(): void {
    this.views.clear();
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private fetchOnce(user: string): Promise<CachedView> {
    const running = this.inFlight.get(user);
    if (running) return running;
    const p = this.fetchView(user)
      .then((view) => {
        const entry = { view, fetchedAtMs: this.now() };
        this.views.delete(user);
        this.views.set(user, entry);
        if (this.views.size > MAX_USERS) this.views.delete(this.views.keys().next().value!);
        return entry;
      })
      .catch((e: unknown) => {
        const reason = e instanceof FiatUnavailable ? e.reason : 'connect';
        this.deps.errors.inc({ reason });
        this.deps.log.warn({ err: e, fiat: this.baseUrl, user }, 'Fiat did not answer a permission lookup');
        throw e;
      })
      .finally(() => this.inFlight.delete(user));
    this.inFlight.set(user, p);
    return p;
  }

  private async fetchView(user: string): Promise<FiatView> {
    let status: number;
    let text: string;
    try {
      const res = await this.pool.request({
        method: 'GET',
        path: `${this.prefix}/authorize/${encodeURIComponent(user)}`,
        // Fiat's AuthorizeController falls back to the unrestricted user's permissions only for a lookup made as
        // the user itself, which is how Clouddriver's client asks (kork propagates X-SPINNAKER-USER).
        headers: { accept: 'application/json', 'x-spinnaker-user': user },
        signal: AbortSignal.timeout(this.config.timeoutMs),
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (e) {
      const err = e as Error & { code?: string };
      const timeout = err.name === 'TimeoutError' || /TIMEOUT/.test(err.code ?? '');
      throw new FiatUnavailable(timeout ? 'timeout' : 'connect', err.code ?? err.message, { cause: e });
    }
    if (status === 404) return NO_RIGHTS;
    if (status < 200 || status >= 300) throw new FiatUnavailable('status', `it answered ${status}`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    const view = parseFiatView(body);
    if (!view) throw new FiatUnavailable('invalid', 'its answer is not a permission view (JSON with accounts[])');
    return view;
  }
}
