import { hostname } from 'node:os';
import type { Logger } from '../shared/logging.js';
import type { AccountActivity, AccountActivityView } from './account-activity.js';
import type { AccountRegistry, AgentReportedStatus } from './accounts.js';
import type { AccountStateStore } from './cache/store.js';
import type { SessionInfo } from './sessions.js';

/**
 * What every replica's admin API shows of agents and accounts held through its peers. Each replica writes, with its
 * lease heartbeat, one document to the shared store (sa_replica_views): its agents as /armory/agents shows them and
 * the status its agents reported for the accounts they hold (kinds, forbidden kinds, error, lag, sync progress). Every
 * replica reads all of them back in the same heartbeat. A killed replica's document expires with its leases, so its
 * entries disappear when its accounts become free. docs/architecture.md says why this and not asking peers per
 * request.
 */

/** One agent stream, as /armory/agents shows it on every replica (plus heldBy). */
export interface AgentView {
  agentId: string;
  accounts: string[];
  caching: boolean;
  clouddriverId: string;
  clouddriverAlive: boolean;
  lastConnection: string;
  type: string;
  sessionId: string;
  version: string;
  zoneId: string;
  peer: string;
  certificateSubject?: string | undefined;
  authIdentity: string;
  rejectedAccounts: { name: string; reason: string }[];
  identity: Record<string, string>;
  connectedAt: string;
  ackedSeq: number;
}

/** Which replica the stream ends on: this one, or a peer sharing the store (as /armory/accounts says it). */
export type HeldBy = 'local' | { replica: string; url: string };

/** What the holder published of an account its agent holds. */
export interface PublishedAccount {
  reported?: AgentReportedStatus | undefined;
  activity: AccountActivityView;
}

interface Published {
  agents: AgentView[];
  accounts: Record<string, PublishedAccount>;
  /** The replica's TaskRunner.ownerId: where a cancel of one of its tasks is sent (absent from older replicas). */
  taskOwner?: string | undefined;
}

interface Peer {
  replica: string;
  url: string;
  /** When its view expires, on this process's monotonic clock (converted from the store's at the read). */
  expiresAt: number;
  doc: Published;
}

export interface ReplicaViewsDeps {
  store: AccountStateStore;
  accounts: AccountRegistry;
  activity: AccountActivity;
  /** This replica's agent streams (those past Hello). */
  sessions: () => SessionInfo[];
  log: Logger;
  /** This replica's TaskRunner.ownerId, published so that peers can send it cancels of its tasks. */
  taskOwner?: () => string;
  /** A clock that never steps (ms), for peers' expiry between reads: performance.now() unless given (tests). */
  monotonicNow?: () => number;
}

/** Views of replicas gone (ids are per process) are deleted this long after they expired. */
const PRUNE_AFTER_MS = 3_600_000;

export function agentView(s: SessionInfo): AgentView {
  return {
    agentId: s.agentId,
    accounts: s.accounts,
    caching: true,
    clouddriverId: hostname(),
    clouddriverAlive: true,
    lastConnection: new Date(s.lastMessageAt).toISOString(),
    type: 'kubernetes',
    sessionId: s.sessionId,
    version: s.version,
    zoneId: s.zone,
    peer: s.peer,
    certificateSubject: s.certificateSubject,
    authIdentity: s.authIdentity,
    rejectedAccounts: s.rejectedAccounts,
    identity: s.identity,
    connectedAt: new Date(s.connectedAt).toISOString(),
    ackedSeq: s.ackedSeq,
  };
}

export class ReplicaViews {
  private peers: Peer[] = [];
  private readonly monotonicNow: () => number;

  constructor(private readonly deps: ReplicaViewsDeps) {
    this.monotonicNow = deps.monotonicNow ?? (() => performance.now());
  }

  /** Publishes this replica's view and reads its peers'; run with every lease renewal. */
  async heartbeat(): Promise<void> {
    const { store, accounts, activity } = this.deps;
    const held: Record<string, PublishedAccount> = {};
    for (const a of accounts.list()) {
      if (!a.sessionId) continue;
      held[a.record.name] = { reported: a.reported, activity: activity.view(a.record.name, a.sessionId) };
    }
    const doc: Published = {
      agents: this.deps.sessions().map(agentView),
      accounts: held,
      ...(this.deps.taskOwner ? { taskOwner: this.deps.taskOwner() } : {}),
    };
    const self = accounts.replica;
    // Expiry is the store's clock's, as leases are: a replica's skewed wall clock neither drops a live peer's view
    // nor keeps a dead one's.
    await store.publishReplicaView(
      { replica: self.id, replicaUrl: self.url, json: JSON.stringify(doc) },
      accounts.leaseMs,
      PRUNE_AFTER_MS,
    );
    const read = this.monotonicNow();
    const { now: storeNow, views } = await store.listReplicaViews();
    const peers: Peer[] = [];
    for (const v of views) {
      if (v.replica === self.id) continue;
      try {
        const parsed = JSON.parse(v.json) as Partial<Published>;
        peers.push({
          replica: v.replica,
          url: v.replicaUrl,
          expiresAt: read + (v.expiresAt - storeNow),
          doc: { agents: parsed.agents ?? [], accounts: parsed.accounts ?? {}, taskOwner: parsed.taskOwner },
        });
      } catch (e) {
        // A document this version cannot read (a newer replica's, mid-upgrade): its entries are left out.
        this.deps.log.warn({ err: e, replica: v.replica }, 'unreadable replica view ignored');
      }
    }
    this.peers = peers;
  }

  /** A stopping replica's entries go at once (its agents are reconnecting elsewhere). */
  async withdraw(): Promise<void> {
    await this.deps.store.dropReplicaView(this.deps.accounts.replica.id);
  }

  /** Peers whose view has not expired: a replica that stopped publishing drops out even between heartbeats. */
  private livePeers(): Peer[] {
    const now = this.monotonicNow();
    return this.peers.filter((p) => p.expiresAt > now);
  }

  /**
   * Every replica's agents, ordered by agent id then replica. An agent that moved (its replica was killed, it
   * reconnected elsewhere) is listed only where it connected last once both views are read, so the old entry goes
   * before the dead replica's view expires.
   */
  agents(): (AgentView & { heldBy: HeldBy })[] {
    const all: (AgentView & { heldBy: HeldBy })[] = [
      ...this.deps.sessions().map((s) => ({ ...agentView(s), heldBy: 'local' as const })),
      ...this.livePeers().flatMap((p) =>
        p.doc.agents.map((a) => ({ ...a, heldBy: { replica: p.replica, url: p.url } as HeldBy })),
      ),
    ];
    const latest = new Map<string, string>();
    for (const a of all) {
      const seen = latest.get(a.agentId);
      if (seen === undefined || a.connectedAt > seen) latest.set(a.agentId, a.connectedAt);
    }
    const key = (a: AgentView & { heldBy: HeldBy }) => (a.heldBy === 'local' ? '' : a.heldBy.replica);
    return all
      .filter((a) => a.heldBy === 'local' || a.connectedAt >= (latest.get(a.agentId) ?? ''))
      .sort((a, b) => cmp(a.agentId, b.agentId) || cmp(a.connectedAt, b.connectedAt) || cmp(key(a), key(b)));
  }

  /** The REST address of the live replica whose tasks `ownerId` owns (Task.ownerId), if it published one. */
  taskOwnerUrl(ownerId: string): string | undefined {
    return this.livePeers().find((p) => p.doc.taskOwner === ownerId)?.url || undefined;
  }

  /** What the replica holding `account` published of it, or undefined (not published yet, or expired). */
  account(replica: string, account: string): PublishedAccount | undefined {
    return this.livePeers().find((p) => p.replica === replica)?.doc.accounts[account];
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
