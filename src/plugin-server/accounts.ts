import { randomUUID } from 'node:crypto';
import { optionsFromWire } from '../shared/account-options.js';
import { FreshRead } from '../shared/fresh-read.js';
import type { Logger } from '../shared/logging.js';
import type { Account, KindKey } from '../shared/proto.js';
import type { AccountRecord, AccountStateStore, ObjectCache } from './cache/store.js';
import {
  holderLost,
  leaseEndedAt,
  leaseLive,
  outranks,
  preferredAgent,
  type AccountLease,
  type LeaseHolder,
  type WriteFence,
} from './ownership.js';
import { claimResult, validAccountName, type RegistrationResult } from './registration.js';

/**
 * The holder's side of a lease ends this fraction of leaseMs after the start of its last successful renewal: peers
 * see it end no earlier than leaseMs after that start (the store stamps it later, at its own clock), so the holder
 * has stopped (closed its streams) before a peer may grant the account to another stream.
 */
export const HOLDER_LEASE_FRACTION = 0.75;

/** A holder reporting FAILED this many lease periods may be replaced by a standby (ownership.ts holderLost). */
export const FAILED_HANDOVER_LEASES = 3;

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
  /** The lease generation this replica's session was granted (the fencing token of its writes). */
  generation?: number | undefined;
  /** When (this process's monotonic clock) it was granted here: a refresh that read the store before does not judge it. */
  grantedAt?: number | undefined;
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
  /** A clock that never steps (ms): times the holder's side of leases. performance.now() unless given (tests). */
  monotonicNow?: () => number;
}

export interface SessionRef {
  id: string;
  agentId: string;
  /** The agent shares its group's accounts (Hello.share_load). */
  shareLoad?: boolean | undefined;
}

/**
 * Which account names exist, who holds them and in what state. An account name belongs to one cluster (API server
 * host + CA fingerprint): another cluster claiming it is rejected and the original keeps working; the same cluster
 * coming back through another stream (reconnect, agent restart) takes the name over.
 */
export class AccountRegistry {
  private readonly accounts = new Map<string, RegisteredAccount>();
  private readonly listeners = new Set<(name: string, state: AccountState | 'REMOVED') => void>();
  private readonly lostListeners = new Set<(name: string, sessionId: string, why: string) => void>();
  private readonly holderLostListeners = new Set<(name: string) => void>();
  /** Accounts a stream of this replica stands by for: checked at each refresh, known here or not. */
  private readonly standingBy = new Set<string>();
  private readonly nameFreeListeners = new Set<(name: string) => void>();
  private readonly handOverListeners = new Set<(name: string, sessionId: string, to: string) => void>();
  /**
   * Load-sharing agents standing by on streams of this replica, by account: each refresh, one that ranks above the
   * live holder and has no handoff recorded for it (its first ask went to a holder that left since) is asked to offer
   * the account again (onStandbyOutranks), which records the handoff. Cleared as it is asked; the offer adds it back.
   */
  private readonly sharingStandbys = new Map<string, Set<string>>();
  private readonly outranksListeners = new Set<(name: string, agentId: string) => void>();
  /** Handoffs this replica asked its streams for: account → `generation/agent`, so each is asked once. */
  private readonly handoffsAsked = new Map<string, string>();
  /**
   * Names a stream of this replica was refused because another cluster's record held them: the cluster of that
   * record, and when (monotonicNow) the refusal came. Checked at each refresh, like standingBy.
   */
  private readonly conflicts = new Map<string, { host: string; fingerprint: string; at: number }>();
  private readonly gracePeriodMs: number;
  private readonly now: () => number;
  private readonly monotonicNow: () => number;
  readonly replica: { id: string; url: string };
  readonly leaseMs: number;
  readonly failedHandoverMs: number;
  private readonly pendingWrites = new Set<Promise<unknown>>();
  /** Releases the store did not take (the write failed), by session: written again before each renewal. */
  private readonly unreleased = new Map<string, string[]>();
  /** Accounts and leases as stored, for lookup() (misses at the same time share one read). */
  private readonly storeRead = new FreshRead(async () => {
    const [records, leases] = await Promise.all([this.store.listAccounts(), this.store.listLeases()]);
    return { records, leases };
  });
  /**
   * When (monotonicNow, immune to wall-clock steps) the last successful lease renewal started: the holder's
   * side of every lease this replica holds ends HOLDER_LEASE_FRACTION of leaseMs later (holderLeaseExpired).
   */
  lastRenewedAt = 0;

  constructor(
    /** Account state, and the object cache's sync state to reload when an account comes (back) here. */
    private readonly store: AccountStateStore & Pick<ObjectCache, 'reloadAccountState'>,
    private readonly log: Logger,
    options: RegistryOptions,
  ) {
    this.gracePeriodMs = options.gracePeriodMs;
    this.now = options.now ?? Date.now;
    this.monotonicNow = options.monotonicNow ?? (() => performance.now());
    this.replica = options.replica ?? { id: `replica-${randomUUID()}`, url: '' };
    this.leaseMs = options.leaseMs ?? 15_000;
    this.failedHandoverMs = FAILED_HANDOVER_LEASES * this.leaseMs;
  }

  /** This replica could not renew its leases in time: it must not hold streams any more (peers soon take over). */
  holderLeaseExpired(): boolean {
    return this.lastRenewedAt > 0 && this.monotonicNow() - this.lastRenewedAt > this.leaseMs * HOLDER_LEASE_FRACTION;
  }

  /** A stream of this replica lost an account it held (taken over, or its lease expired): tell its agent. */
  onLost(listener: (name: string, sessionId: string, why: string) => void): void {
    this.lostListeners.add(listener);
  }

  /** The account lost its holder (ORPHANED, REMOVED, FAILED past failedHandoverMs): standbys may take it. */
  onHolderLost(listener: (name: string) => void): void {
    this.holderLostListeners.add(listener);
  }

  /**
   * The record of another cluster that refused streams of this replica the name is gone (removed after its grace
   * period or by its agent, on any replica) or names another cluster now: those streams may offer the name again.
   */
  onNameFree(listener: (name: string) => void): void {
    this.nameFreeListeners.add(listener);
  }

  /**
   * A stream of this replica holds an account that an agent of its group ranking first for it asked for
   * (ownership.ts decideClaim): its agent is to stop the account's watch and hand it over (handOver).
   */
  onHandOver(listener: (name: string, sessionId: string, to: string) => void): void {
    this.handOverListeners.add(listener);
  }

  /**
   * A load-sharing agent standing by on a stream of this replica ranks above the account's live holder, and no
   * handoff to it is recorded: its stream is to offer the account again (the claim records the handoff).
   */
  onStandbyOutranks(listener: (name: string, agentId: string) => void): void {
    this.outranksListeners.add(listener);
  }

  /** Asks the holding stream for the handoff recorded on its lease, once per lease generation and agent. */
  private askHandoff(l: AccountLease): void {
    const a = this.accounts.get(l.account);
    if (l.handoffTo === '' || l.handoffTo === l.agentId || !a?.sessionId || a.generation !== l.generation) return;
    const key = `${l.generation}/${l.handoffTo}`;
    if (this.handoffsAsked.get(l.account) === key) return;
    this.handoffsAsked.set(l.account, key);
    this.log.info(
      { account: l.account, from: l.agentId, to: l.handoffTo },
      'asking the holder to hand the account over',
    );
    for (const listener of this.handOverListeners) listener(l.account, a.sessionId, l.handoffTo);
  }

  /**
   * The stream's agent stopped the account's watch at the server's request (AccountsUpdate.handed_over, after
   * everything it sent before): its lease is released at once, the cache kept, and the stream stands by for it
   * (also when it held it no more: its agent no longer watches it, and is asked to offer it again once it is free).
   */
  async handOver(sessionId: string, name: string): Promise<void> {
    this.standingBy.add(name);
    const a = this.accounts.get(name);
    if (!a || a.sessionId !== sessionId) return;
    await this.store.releaseAccounts(this.replica.id, sessionId, [name]);
    if (this.accounts.get(name) !== a || a.sessionId !== sessionId) return;
    a.sessionId = undefined;
    a.generation = undefined;
    a.state = 'ORPHANED';
    a.orphanedAt = this.now();
    a.lastUpdated = this.now();
    this.handoffsAsked.delete(name);
    this.log.info({ account: name, sessionId }, 'account handed over: lease released, cache kept');
    this.emit(name, 'ORPHANED');
  }

  private lost(name: string, a: RegisteredAccount, why: string): void {
    const sessionId = a.sessionId;
    if (!sessionId) return;
    a.sessionId = undefined;
    a.generation = undefined;
    this.log.warn({ account: name, sessionId, why }, 'stream lost the account it held');
    for (const l of this.lostListeners) l(name, sessionId, why);
  }

  private holderGone(name: string): void {
    for (const l of this.holderLostListeners) l(name);
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
    if (state === 'ORPHANED' || state === 'REMOVED') this.holderGone(name);
  }

  private holder(name: string, sessionId: string): LeaseHolder | undefined {
    const a = this.accounts.get(name);
    if (!a || a.sessionId !== sessionId || a.generation === undefined) return undefined;
    return { replica: this.replica.id, sessionId, generation: a.generation };
  }

  /**
   * Claims the account for the stream in the store (ownership.ts decideClaim, atomic there): granted, the stream
   * holds it under a new generation; otherwise it is refused (another cluster) or stands by (another agent holds it).
   */
  async register(session: SessionRef, account: Account): Promise<RegistrationResult> {
    const host = account.cluster?.apiServerHost ?? '';
    const fingerprint = (account.cluster?.caFingerprint ?? '').toLowerCase();
    const offer = { name: account.name, agentId: session.agentId, host, fingerprint };
    const invalid = validAccountName(offer);
    if (invalid) return invalid;
    const existing = this.accounts.get(account.name);
    const record: AccountRecord = {
      name: account.name,
      agentId: session.agentId,
      apiServerHost: host,
      caFingerprint: fingerprint,
      kubernetesVersion: account.cluster?.kubernetesVersion ?? '',
      ...optionsFromWire(account),
      registeredAt: this.now(),
    };
    const outcome = await this.store.claimAccount(
      {
        account: account.name,
        replica: this.replica.id,
        replicaUrl: this.replica.url,
        sessionId: session.id,
        agentId: session.agentId,
        cluster: { host, fingerprint },
        leaseMs: this.leaseMs,
        failedHandoverMs: this.failedHandoverMs,
        shareLoad: session.shareLoad ?? false,
      },
      record,
    );
    if (!outcome.granted) {
      if (outcome.code === 'standby') {
        this.standingBy.add(account.name);
        if (session.shareLoad) {
          const agents = this.sharingStandbys.get(account.name) ?? new Set<string>();
          this.sharingStandbys.set(account.name, agents.add(session.agentId));
        }
        // Held through this replica: ask its stream now rather than at the next refresh.
        if (outcome.handoff?.replica === this.replica.id) this.askHandoff(outcome.handoff);
      } else {
        const { apiServerHost: host, caFingerprint: fingerprint } = outcome.record;
        this.conflicts.set(account.name, { host, fingerprint, at: this.monotonicNow() });
      }
      return claimResult(offer, outcome, this.replica.id);
    }
    this.sharingStandbys.get(account.name)?.delete(session.agentId);
    const current = this.accounts.get(account.name);
    if (current?.sessionId && current.sessionId !== session.id) {
      this.log.info(
        { account: account.name, from: current.sessionId, to: session.id, agentId: session.agentId },
        'account taken over by another stream of this replica',
      );
      // Its agent reconnected (same agentId) or was replaced: either way the older stream is told and closed.
      this.lost(account.name, current, `taken over by stream ${session.id} of agent ${session.agentId}`);
    }
    // A peer may have written the account's sync state since this process last did.
    this.store.reloadAccountState(account.name);
    this.accounts.set(account.name, {
      record,
      state: 'ACTIVE',
      sessionId: session.id,
      generation: outcome.lease.generation,
      grantedAt: this.monotonicNow(),
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

  /**
   * The fencing token of the stream's write to these accounts (each one it holds; the caller dropped the others):
   * the generation of each one's lease as the store granted it to the stream.
   */
  writeFence(sessionId: string, accounts: Iterable<string>): WriteFence {
    const generations = new Map<string, number>();
    for (const name of accounts) {
      const a = this.accounts.get(name);
      // 0 is never granted: an account this stream no longer holds is refused rather than written unfenced.
      generations.set(name, a?.sessionId === sessionId ? (a.generation ?? 0) : 0);
    }
    return { replica: this.replica.id, sessionId, generations };
  }

  /** The store refused the stream's write (LeaseLost): it no longer holds these accounts, and is told (onLost). */
  writeRefused(sessionId: string, accounts: readonly string[]): void {
    for (const name of accounts) {
      const a = this.accounts.get(name);
      if (a?.sessionId === sessionId) this.lost(name, a, 'the store refused its write: the lease is no longer its own');
    }
  }

  /** The stream ended: everything it held becomes ORPHANED (cache kept for the grace period). */
  release(sessionId: string): string[] {
    const released: string[] = [];
    for (const [name, a] of this.accounts) {
      if (a.sessionId !== sessionId) continue;
      a.sessionId = undefined;
      a.generation = undefined;
      a.state = 'ORPHANED';
      a.orphanedAt = this.now();
      a.lastUpdated = this.now();
      released.push(name);
    }
    // Peers learn it from the store. A failed write is tried again before the next renewal, which would otherwise
    // keep these leases alive for good, with no stream behind them; until then they only expire (leaseMs).
    const write = this.store
      .releaseAccounts(this.replica.id, sessionId, released)
      .catch((e: unknown) => {
        if (released.length) this.unreleased.set(sessionId, released);
        this.log.warn({ err: e, accounts: released }, 'could not release leases; trying again before the renewal');
      })
      .finally(() => this.pendingWrites.delete(write));
    this.pendingWrites.add(write);
    for (const name of released) this.emit(name, 'ORPHANED');
    return released;
  }

  /** The agent removed the account from its configuration: gone now, with its cache. */
  async remove(sessionId: string, name: string): Promise<boolean> {
    const holder = this.holder(name, sessionId);
    if (!holder) return false;
    // Only while this stream still holds it: a stream that lost the account must not remove its new holder's cache.
    if (!(await this.store.dropHeldAccount(name, holder))) {
      const a = this.accounts.get(name);
      if (a?.sessionId === sessionId) this.lost(name, a, 'lease lost before the agent removed the account');
      return false;
    }
    this.accounts.delete(name);
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
    const holder = this.holder(name, sessionId);
    if (holder) {
      void this.store
        .reportAccountState(name, holder, a.state)
        .then((held) => {
          const now = this.accounts.get(name);
          if (!held && now?.sessionId === sessionId) this.lost(name, now, 'lease lost; state not recorded');
        })
        .catch((e: unknown) => this.log.warn({ err: e, account: name }, 'could not record account state'));
    }
    this.emit(name, a.state);
  }

  /**
   * Renews this replica's leases and takes in what the store says: a stream of this replica whose lease is gone
   * (taken over, expired) is told (onLost); accounts a peer's agent holds are served here too (reads, and operations
   * through that replica); accounts no replica holds become ORPHANED from the moment their holder left; an account
   * whose holder lost it lets standbys take it (onHolderLost). Liveness is judged at the store's clock. Runs every
   * leaseMs / 3.
   */
  async refresh(): Promise<void> {
    const started = this.monotonicNow();
    // A lease this replica cannot release must not be renewed: the refresh fails instead, and it expires.
    for (const [sessionId, names] of [...this.unreleased]) {
      await this.store.releaseAccounts(this.replica.id, sessionId, names);
      this.unreleased.delete(sessionId);
    }
    await this.store.renewLeases(this.replica.id, this.leaseMs);
    this.lastRenewedAt = started;
    const [records, { now: storeNow, leases }] = await Promise.all([
      this.store.listAccounts(),
      this.store.listLeases(),
    ]);
    const local = this.now();
    const leaseOf = new Map(leases.map((l) => [l.account, l]));
    const recordOf = new Map(records.map((r) => [r.name, r]));
    const known = new Set<string>();
    for (const record of records) {
      known.add(record.name);
      const a = this.accounts.get(record.name);
      const l = leaseOf.get(record.name);
      const live = l !== undefined && leaseLive(l, storeNow);
      if (a?.sessionId) {
        // Granted after the store was read: judged next time.
        if ((a.grantedAt ?? 0) > started) continue;
        const ours =
          live && l.replica === this.replica.id && l.sessionId === a.sessionId && l.generation === a.generation;
        if (ours) {
          if (holderLost(l, storeNow, this.failedHandoverMs)) this.holderGone(record.name);
          this.askHandoff(l);
          continue;
        }
        this.lost(record.name, a, live ? `taken over through replica ${l.replica}` : 'lease expired');
      }
      const peerHolds = live && l.replica !== this.replica.id;
      const next: RegisteredAccount = a ?? { record, state: 'ORPHANED', lastUpdated: local };
      next.record = record;
      const before = next.state;
      if (peerHolds) {
        next.peer = { replica: l.replica, url: l.replicaUrl, agentId: l.agentId };
        next.state = l.state;
        next.orphanedAt = undefined;
      } else {
        next.peer = undefined;
        next.state = 'ORPHANED';
        // Orphaned since its holder released or stopped renewing, at the store's clock, as a time of this process.
        const since = l ? Math.max(0, storeNow - leaseEndedAt(l)) : 0;
        next.orphanedAt = next.orphanedAt ?? local - since;
      }
      if (!a || before !== next.state) next.lastUpdated = local;
      this.accounts.set(record.name, next);
      if (!a || before !== next.state) this.emit(record.name, next.state);
      else if (peerHolds && holderLost(l, storeNow, this.failedHandoverMs)) this.holderGone(record.name);
    }
    // Standbys wait for a holder this replica may never have seen: removed, released or lost, they take it.
    for (const name of [...this.standingBy]) {
      const l = leaseOf.get(name);
      if (known.has(name) && !holderLost(l, storeNow, this.failedHandoverMs)) continue;
      this.standingBy.delete(name);
      this.holderGone(name);
    }
    for (const [name, agents] of [...this.sharingStandbys]) {
      const l = leaseOf.get(name);
      const best = preferredAgent(name, agents);
      if (!l || !leaseLive(l, storeNow) || !l.shareLoad || best === undefined) continue;
      if (!outranks(name, best, l.agentId) || l.handoffTo === best) continue;
      if (l.handoffTo !== '' && !outranks(name, best, l.handoffTo)) continue;
      this.sharingStandbys.delete(name);
      for (const listener of this.outranksListeners) listener(name, best);
    }
    // Streams refused for another cluster's record wait for that record to go: removed here or on a peer, they
    // may claim the name (else nobody would: the refused agents never offer it again on their own).
    for (const [name, c] of [...this.conflicts]) {
      // Refused after the store was read: judged next time.
      if (c.at > started) continue;
      const r = recordOf.get(name);
      if (r && r.apiServerHost === c.host && r.caFingerprint === c.fingerprint) continue;
      this.conflicts.delete(name);
      for (const l of this.nameFreeListeners) l(name);
    }
    for (const [name, a] of [...this.accounts]) {
      if (known.has(name)) continue;
      if (a.sessionId && (a.grantedAt ?? 0) > started) continue;
      if (a.sessionId) this.lost(name, a, 'account removed from the store');
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
      // A cheap pre-filter on this replica's clock; the store decides at its own (a clock stepped ahead only asks early).
      if (this.now() - a.orphanedAt < this.gracePeriodMs) continue;
      try {
        if (!(await this.store.dropAccountIfUnheld(name, this.gracePeriodMs))) continue;
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
    const {
      records,
      leases: { now: storeNow, leases },
    } = await this.storeRead.get();
    const now = this.now();
    const record = records.find((r) => r.name === name);
    // Learned meanwhile (a refresh, a registration here), or not in the store: the registry's answer stands.
    if (this.accounts.has(name) || !record) return this.accounts.get(name);
    const l = leases.find((x) => x.account === name);
    // Leases are judged at the store's clock, as refresh() judges them.
    const peerHolds = l !== undefined && l.replica !== this.replica.id && leaseLive(l, storeNow);
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
          // Since its holder released or stopped renewing, at the store's clock, as a time of this process.
          orphanedAt: now - (l ? Math.max(0, storeNow - leaseEndedAt(l)) : 0),
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
