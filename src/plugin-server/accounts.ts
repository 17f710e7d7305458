import type { Logger } from '../shared/logging.js';
import type { Account, KindKey } from '../shared/proto.js';
import type { AccountRecord, CacheStore } from './cache/store.js';

/**
 * ACTIVE: held by a connected agent. ORPHANED: its agent left (or the server restarted); the cache is kept and
 * served for the grace period, then removed. FAILED: held by an agent that reports it cannot reach the cluster.
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
  /** Session holding the account; undefined when ORPHANED. */
  sessionId?: string | undefined;
  orphanedAt?: number | undefined;
  lastUpdated: number;
  reported?: AgentReportedStatus | undefined;
}

export type RegistrationResult = { accepted: true } | { accepted: false; reason: string };

export interface SessionRef {
  id: string;
  agentId: string;
}

const ACCOUNT_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;

/**
 * Which account names exist, who holds them and in what state. An account name belongs to one cluster (API server
 * host + CA fingerprint): another cluster claiming it is rejected and the original keeps working; the same cluster
 * coming back through another stream (reconnect, agent restart) takes the name over.
 */
export class AccountRegistry {
  private readonly accounts = new Map<string, RegisteredAccount>();
  private readonly listeners = new Set<(name: string, state: AccountState | 'REMOVED') => void>();

  constructor(
    private readonly store: CacheStore,
    private readonly log: Logger,
    private readonly gracePeriodMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Accounts persisted by a previous run start ORPHANED: their agents must come back within the grace period. */
  async load(): Promise<void> {
    for (const record of await this.store.listAccounts()) {
      this.accounts.set(record.name, { record, state: 'ORPHANED', orphanedAt: this.now(), lastUpdated: this.now() });
    }
  }

  onChange(listener: (name: string, state: AccountState | 'REMOVED') => void): void {
    this.listeners.add(listener);
  }

  private emit(name: string, state: AccountState | 'REMOVED'): void {
    for (const l of this.listeners) l(name, state);
  }

  async register(session: SessionRef, account: Account): Promise<RegistrationResult> {
    if (!ACCOUNT_NAME.test(account.name)) {
      return { accepted: false, reason: `invalid account name ${JSON.stringify(account.name)}` };
    }
    const host = account.cluster?.apiServerHost ?? '';
    const fingerprint = (account.cluster?.caFingerprint ?? '').toLowerCase();
    const existing = this.accounts.get(account.name);
    if (existing && !sameCluster(existing.record, host, fingerprint)) {
      return {
        accepted: false,
        reason:
          `account name ${account.name} is already registered by agent ${existing.record.agentId} for cluster ` +
          `${existing.record.apiServerHost} (CA ${shortFingerprint(existing.record.caFingerprint)}); this agent ` +
          `offers cluster ${host} (CA ${shortFingerprint(fingerprint)})`,
      };
    }
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
      registeredAt: this.now(),
    };
    await this.store.saveAccount(record);
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
      this.emit(name, 'ORPHANED');
    }
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
    this.emit(name, a.state);
  }

  /** Removes ORPHANED accounts whose grace period is over, with their cache. Returns the names removed. */
  async sweep(): Promise<string[]> {
    const removed: string[] = [];
    for (const [name, a] of [...this.accounts]) {
      if (a.state !== 'ORPHANED' || a.orphanedAt === undefined) continue;
      if (this.now() - a.orphanedAt < this.gracePeriodMs) continue;
      this.accounts.delete(name);
      try {
        await this.store.dropAccount(name);
        removed.push(name);
        this.emit(name, 'REMOVED');
        this.log.info({ account: name }, 'orphaned account removed with its cache after the grace period');
      } catch (e) {
        // Try again on the next sweep.
        this.accounts.set(name, a);
        this.log.warn({ account: name, err: e }, 'could not remove orphaned account; will retry');
      }
    }
    return removed;
  }

  get(name: string): RegisteredAccount | undefined {
    return this.accounts.get(name);
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

function sameCluster(record: AccountRecord, host: string, fingerprint: string): boolean {
  return record.apiServerHost === host && record.caFingerprint === fingerprint;
}

function shortFingerprint(f: string): string {
  return f ? `${f.slice(0, 16)}…` : 'none';
}
