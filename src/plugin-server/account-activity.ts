/**
 * What this replica has seen of each account's data flow: the last change→cache lag, and the initial sync in
 * progress (scopes between SyncStart and SyncEnd). Kept per account in memory and shown by /armory/accounts (and so
 * by `scale-agent status`) instead of as labelled metrics: an `account` label on a lag histogram is thousands of
 * series, while /metrics carries the fleet-wide histogram and a count of syncing accounts.
 */

/** The account's initial sync as this replica sees it; present while a scope of the holding stream is listing. */
export interface AccountSyncView {
  /** Scopes (kind, or kind in one namespace) whose list the agent has started and not finished. */
  scopesListing: number;
  /** Scopes listed completely since this sync began. */
  scopesListed: number;
  /** Changes of the account applied since this sync began (the listed objects, plus watch events meanwhile). */
  objects: number;
  /** When the first scope of this sync started (ms since the epoch). */
  startedAt: number;
}

export interface AccountActivityView {
  /** From the agent reading the account's latest applied batch off its watch to it being in the cache. */
  changeLagMs?: number | undefined;
  /** When that batch was applied (ms since the epoch). */
  lastChangeAt?: number | undefined;
  sync?: AccountSyncView | undefined;
}

interface Entry {
  lagMs?: number;
  lagAt?: number;
  /** The stream whose sync this is: a sync of a stream that lost the account is not shown. */
  sessionId?: string;
  listing: Set<string>;
  listed: number;
  objects: number;
  startedAt: number;
}

export class AccountActivity {
  private readonly entries = new Map<string, Entry>();

  private entry(account: string): Entry {
    let e = this.entries.get(account);
    if (!e) {
      e = { listing: new Set(), listed: 0, objects: 0, startedAt: 0 };
      this.entries.set(account, e);
    }
    return e;
  }

  /**
   * `count` changes of the account were applied at `now`; `observedAtMs` is the agent's time for the oldest change
   * of their batch (0 when unknown), so the lag is that of the batch's oldest change, an upper bound for the rest.
   */
  applied(account: string, count: number, observedAtMs: number, now: number): void {
    const e = this.entry(account);
    if (observedAtMs > 0) {
      e.lagMs = Math.max(0, now - observedAtMs);
      e.lagAt = now;
    }
    if (e.listing.size > 0) e.objects += count;
  }

  syncStart(sessionId: string, account: string, scope: string, now: number): void {
    const e = this.entry(account);
    // Scopes left listing by a stream that lost the account never end: its successor lists them again.
    if (e.sessionId !== sessionId) e.listing.clear();
    // A new sync starts with the first scope listing (a quiet account relisting after 410 Gone is one too).
    if (e.listing.size === 0) Object.assign(e, { sessionId, listed: 0, objects: 0, startedAt: now });
    e.listing.add(scope);
  }

  syncEnd(sessionId: string, account: string, scope: string): void {
    const e = this.entries.get(account);
    if (!e || e.sessionId !== sessionId || !e.listing.delete(scope)) return;
    e.listed += 1;
  }

  /** The account as seen by this replica; a sync shows only while `holder` (its session here) is the one syncing. */
  view(account: string, holder: string | undefined): AccountActivityView {
    const e = this.entries.get(account);
    if (!e) return {};
    const syncing = holder !== undefined && e.sessionId === holder && e.listing.size > 0;
    return {
      changeLagMs: e.lagMs,
      lastChangeAt: e.lagAt,
      sync: syncing
        ? { scopesListing: e.listing.size, scopesListed: e.listed, objects: e.objects, startedAt: e.startedAt }
        : undefined,
    };
  }

  /** Accounts whose holding stream (per `holderOf`) is in an initial sync. */
  syncing(holderOf: (account: string) => string | undefined): number {
    let n = 0;
    for (const [account, e] of this.entries) {
      if (e.listing.size > 0 && e.sessionId !== undefined && holderOf(account) === e.sessionId) n += 1;
    }
    return n;
  }

  forget(account: string): void {
    this.entries.delete(account);
  }
}
