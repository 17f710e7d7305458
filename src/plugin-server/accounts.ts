import { randomUUID } from 'node:crypto';
import { FreshRead } from '../shared/fresh-read.js';
import type { Logger } from '../shared/logging.js';
import type { Account, KindKey } from '../shared/proto.js';
import {
  leaseLive,
  type AccountLease,
  type AccountRecord,
  type AccountStateStore,
  type ObjectCache,
} from './cache/store.js';
import { decideHolder, type RegistrationResult } from './registration.js';

/**
 * ACTIVE: held by a connected agent (on this replica or a peer). ORPHANED: no replica's agent holds it; the cache
 * is kept and served for the grace period, then removed. FAILED: held by an agent that reports it cannot reach the
 * cluster.
 */
export type AccountState = 'ACTIVE' | 'ORPHANED' | 'FAILED';

export interface AgentReportedStatus {
  state: 'ACTIVE' | 'FAILED';
  error: string;
  forbiddenKinds: string[];
  kinds: KindKey[];
  at: number;
}

export interface RegisteredAccount {
  record: AccountRecord;
  state: AccountState;
  /** Session of this replica holding the account; undefined when ORPHANED or held by a peer. */
  sessionId?: string | undefined;
  /** The peer replica holding it, when one does (its agent's stream ends there). */
  peer?: { replica: string; url: string; agentId: string } | undefined;
  orphanedAt?: number | undefined;
  lastUpdated: number;
  reported?: AgentReportedStatus | undefined;
}

export interface RegistryOptions {
  gracePeriodMs: number;
  /** This process among the replicas sharing the store. */
  replica?: { id: string; url: string };
  /** How long a holder's lease lasts without renewal (a killed replica's accounts are free after this). */
  leaseMs?: number;
  now?: () => number;
}

export interface SessionRef {
  id: string;
  agentId: string;
}

/**
 * Which account names exist, who holds them and in what state. An account name belongs to one cluster (API server
 * host + CA fingerprint): another cluster claiming it is rejected and the original keeps working; the same cluster
 * coming back through another stream (reconnect, agent restart) takes the name over.
 */
export class AccountRegistry {
  private readonly accounts = new Map<string, RegisteredAccount>();
  private readonly listeners = new Set<(name: string, state: AccountState | 'REMOVED') => void>();
  private readonly gracePeriodMs: number;
  private readonly now: () => number;
  readonly replica: { id: string; url: string };
  readonly leaseMs: number;
  private readonly pendingWrites = new Set<Promise<unknown>>();
  /** Accounts and leases as stored, for lookup() (misses at the same time share one read). */
  private readonly storeRead = new FreshRead(async () => {
    const [records, leases] = await Promise.all([this.store.listAccounts(), this.store.listLeases()]);
    return { records, leases };
  });
  /** Time of the last successful lease renewal (for readiness: a replica that lost the store holds nothing). */
  lastRenewedAt = 0;

  constructor(
    /** Account state, and the object cache's sync state to reload when an account comes (back) here. */
    private readonly store: AccountStateStore & Pick<ObjectCache, 'reloadAccountState'>,
    private readonly log: Logger,
    options: RegistryOptions,
  ) {
    this.gracePeriodMs = options.gracePeriodMs;
    this.now = options.now ?? Date.now;
    this.replica = options.replica ?? { id: `replica-${randomUUID()}`, url: '' };
    this.leaseMs = options.leaseMs ?? 15_000;
  }

  /** Accounts known to the store: held by a peer (live lease) or ORPHANED since their lease ended. */
  async load(): Promise<void> {
    await this.refresh();
  }

  onChange(listener: (name: string, state: AccountState | 'REMOVED') => void): void {
    this.listeners.add(listener);
  }

  private emit(name: string, state: AccountState | 'REMOVED'): void {
    for (const l of this.listeners) l(name, state);
  }

  private lease(name: string, sessionId: string, agentId: string, state: 'ACTIVE' | 'FAILED'): AccountLease {
    return {
      account: name,
      replica: this.replica.id,
      replicaUrl: this.replica.url,
      sessionId,
      agentId,
      state,
      expiresAt: this.now() + this.leaseMs,
      releasedAt: 0,
    };
  }

  async register(session: SessionRef, account: Account): Promise<RegistrationResult> {
    const host = account.cluster?.apiServerHost ?? '';
    const fingerprint = (account.cluster?.caFingerprint ?? '').toLowerCase();
    const existing = this.accounts.get(account.name);
    const decision = decideHolder({ name: account.name, agentId: session.agentId, host, fingerprint }, existing);
    if (!decision.accepted) return decision;
    if (existing?.sessionId && existing.sessionId !== session.id) {
      this.log.info(
        { account: account.name, from: existing.sessionId, to: session.id, agentId: session.agentId },
        'same cluster registered again through another stream; the newer stream takes the account over',
      );
    }
    const record: AccountRecord = {
      name: account.name,
      agentId: session.agentId,
      apiServerHost: host,
      caFingerprint: fingerprint,
      kubernetesVersion: account.cluster?.kubernetesVersion ?? '',
      namespaces: [...account.namespaces],
      omitNamespaces: [...account.omitNamespaces],
      kinds: [...account.kinds],
      omitKinds: [...account.omitKinds],
      permissions: { READ: [...(account.permissions?.read ?? [])], WRITE: [...(account.permissions?.write ?? [])] },
      onlySpinnakerManaged: account.onlySpinnakerManaged,
      cacheAllApplicationRelationships: account.cacheAllApplicationRelationships,
      registeredAt: this.now(),
    };
    // The lease first: a peer sweeping the account at this moment either removed it before (this registration then
    // starts from an empty cache) or sees the lease and keeps it (dropAccountIfUnheld is atomic with the check).
    await this.store.holdAccount(this.lease(account.name, session.id, session.agentId, 'ACTIVE'));
    await this.store.saveAccount(record);
    // A peer may have written the account's sync state since this process last did.
    this.store.reloadAccountState(account.name);
    this.accounts.set(account.name, {
      record,
      state: 'ACTIVE',
      sessionId: session.id,
      lastUpdated: this.now(),
      reported: existing?.reported,
    });
    this.emit(account.name, 'ACTIVE');
    return { accepted: true };
  }

  /** Whether `sessionId` currently holds `name` (changes from a stream that lost the account are dropped). */
  holds(sessionId: string, name: string): boolean {
    return this.accounts.get(name)?.sessionId === sessionId;
  }

  /** The stream ended: everything it held becomes ORPHANED (cache kept for the grace period). */
  release(sessionId: string): string[] {
    const released: string[] = [];
    for (const [name, a] of this.accounts) {
      if (a.sessionId !== sessionId) continue;
      a.sessionId = undefined;
      a.state = 'ORPHANED';
      a.orphanedAt = this.now();
      a.lastUpdated = this.now();
      released.push(name);
    }
    // Peers learn it from the store; if that write fails the lease simply expires (leaseMs) and they learn it then.
    const write = this.store
      .releaseAccounts(this.replica.id, sessionId, released, this.now())
      .catch((e: unknown) => this.log.warn({ err: e, accounts: released }, 'could not release leases; they expire'))
      .finally(() => this.pendingWrites.delete(write));
    this.pendingWrites.add(write);
    for (const name of released) this.emit(name, 'ORPHANED');
    return released;
  }

  /** The agent removed the account from its configuration: gone now, with its cache. */
  async remove(sessionId: string, name: string): Promise<boolean> {
    const a = this.accounts.get(name);
    if (!a || a.sessionId !== sessionId) return false;
    this.accounts.delete(name);
    await this.store.dropAccount(name);
    this.emit(name, 'REMOVED');
    return true;
  }

  /** The operator deleted, deactivated or redefined the account (dynamic accounts): gone now, with its cache. */
  async forget(name: string): Promise<boolean> {
    if (!this.accounts.has(name)) {
      await this.store.dropAccount(name);
      return false;
    }
    this.accounts.delete(name);
    await this.store.dropAccount(name);
    this.emit(name, 'REMOVED');
    return true;
  }

  report(sessionId: string, name: string, status: Omit<AgentReportedStatus, 'at'>): void {
    const a = this.accounts.get(name);
    if (!a || a.sessionId !== sessionId) return;
    a.reported = { ...status, at: this.now() };
    a.state = status.state === 'FAILED' ? 'FAILED' : 'ACTIVE';
    a.lastUpdated = this.now();
    void this.store
      .holdAccount(this.lease(name, sessionId, a.record.agentId, a.state))
      .catch((e: unknown) => this.log.warn({ err: e, account: name }, 'could not record account state'));
    this.emit(name, a.state);
  }

  /**
   * Renews this replica's leases and takes in what peers hold from the store: accounts a peer's agent holds are
   * served here too (reads, and operations through that replica), and accounts no replica holds become ORPHANED
   * from the moment their holder left. Runs every leaseMs / 3.
   */
  async refresh(): Promise<void> {
    const now = this.now();
    await this.store.renewLeases(this.replica.id, now + this.leaseMs);
    this.lastRenewedAt = now;
    const [records, leases] = await Promise.all([this.store.listAccounts(), this.store.listLeases()]);
    const leaseOf = new Map(leases.map((l) => [l.account, l]));
    const known = new Set<string>();
    for (const record of records) {
      known.add(record.name);
      const a = this.accounts.get(record.name);
      const l = leaseOf.get(record.name);
      const peerHolds = l !== undefined && l.replica !== this.replica.id && leaseLive(l, now);
      if (a?.sessionId) {
        if (!peerHolds) continue;
        // A peer's agent took the account over (its stream is newer): this replica's stream stops writing it.
        this.log.info({ account: record.name, replica: l.replica }, 'account taken over through another replica');
        a.sessionId = undefined;
      }
      const next: RegisteredAccount = a ?? { record, state: 'ORPHANED', lastUpdated: now };
      next.record = record;
      const before = next.state;
      if (peerHolds) {
        next.peer = { replica: l.replica, url: l.replicaUrl, agentId: l.agentId };
        next.state = l.state;
        next.orphanedAt = undefined;
      } else {
        next.peer = undefined;
        next.state = 'ORPHANED';
        // Orphaned since its holder released or stopped renewing; a record without any lease since now.
        next.orphanedAt = next.orphanedAt ?? (l ? Math.min(now, l.releasedAt || l.expiresAt) : now);
      }
      if (!a || before !== next.state) next.lastUpdated = now;
      this.accounts.set(record.name, next);
      if (!a || before !== next.state) this.emit(record.name, next.state);
    }
    for (const [name, a] of [...this.accounts]) {
      if (known.has(name) || a.sessionId) continue;
      // Removed by a peer (grace period over, or the agent dropped it there).
      this.accounts.delete(name);
      this.emit(name, 'REMOVED');
    }
  }

  /**
   * Removes ORPHANED accounts whose grace period is over, with their cache, unless a replica's agent holds them
   * again (checked in the store, atomically with the removal). Returns the names removed.
   */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    for (const [name, a] of [...this.accounts]) {
      if (a.state !== 'ORPHANED' || a.orphanedAt === undefined) continue;
      if (this.now() - a.orphanedAt < this.gracePeriodMs) continue;
      try {
        if (!(await this.store.dropAccountIfUnheld(name, this.now()))) continue;
        if (this.accounts.get(name) === a && !a.sessionId) this.accounts.delete(name);
        removed.push(name);
        this.emit(name, 'REMOVED');
        this.log.info({ account: name }, 'orphaned account removed with its cache after the grace period');
      } catch (e) {
        // Try again on the next sweep.
        this.log.warn({ account: name, err: e }, 'could not remove orphaned account; will retry');
      }
    }
    return removed;
  }

  /** Waits for lease releases still being written (a stopping replica hands its accounts to peers at once). */
  async flush(): Promise<void> {
    await Promise.all([...this.pendingWrites]);
  }

  get(name: string): RegisteredAccount | undefined {
    return this.accounts.get(name);
  }

  /**
   * The account, reading through to the store when this replica does not know it yet: registered through a peer
   * since the last refresh (up to leaseMs / 3 ago), it is taken in now — held by that peer, or ORPHANED — so a
   * request for it is served (an operation forwarded to the holder) instead of refused. Only adds what is unknown
   * here; everything else is refresh()'s. Concurrent misses share one read of the store, started after the miss.
   */
  async lookup(name: string): Promise<RegisteredAccount | undefined> {
    const known = this.accounts.get(name);
    if (known) return known;
    const { records, leases } = await this.storeRead.get();
    const now = this.now();
    const record = records.find((r) => r.name === name);
    // Learned meanwhile (a refresh, a registration here), or not in the store: the registry's answer stands.
    if (this.accounts.has(name) || !record) return this.accounts.get(name);
    const l = leases.find((x) => x.account === name);
    const peerHolds = l !== undefined && l.replica !== this.replica.id && leaseLive(l, now);
    const entry: RegisteredAccount = peerHolds
      ? {
          record,
          state: l.state,
          peer: { replica: l.replica, url: l.replicaUrl, agentId: l.agentId },
          lastUpdated: now,
        }
      : {
          record,
          state: 'ORPHANED',
          orphanedAt: l ? Math.min(now, l.releasedAt || l.expiresAt) : now,
          lastUpdated: now,
        };
    this.accounts.set(name, entry);
    this.emit(name, entry.state);
    return entry;
  }

  list(): RegisteredAccount[] {
    return [...this.accounts.values()].sort((a, b) => (a.record.name < b.record.name ? -1 : 1));
  }

  countByState(): Record<AccountState, number> {
    const out: Record<AccountState, number> = { ACTIVE: 0, ORPHANED: 0, FAILED: 0 };
    for (const a of this.accounts.values()) out[a.state] += 1;
    return out;
  }
}
