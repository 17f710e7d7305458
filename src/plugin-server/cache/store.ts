/**
 * The cache of every object of every cluster. Three implementations (memory, mysql, postgres) pass one contract suite
 * (test/unit/plugin-server/store-contract.ts).
 *
 * Rules both follow:
 * - Objects are keyed by (account, group, kind, namespace, name); the kind is matched case-insensitively because
 *   Clouddriver names kinds in lowerCamel ("replicaSet") while Kubernetes spells them "ReplicaSet".
 * - A change replaces the stored object only when its resourceVersion is newer (compareResourceVersions); deletes
 *   are kept as tombstones so a replayed older ADDED cannot resurrect the object. Replays come only from where an
 *   agent resumes: its scope's resume point (the stored resourceVersion of a synced scope, which the store moves
 *   on with each change and bookmark in the same write). A watch resumed there sends only events newer than it, so
 *   a tombstone at or below the resume point can stop nothing any more: each bookmark and SyncEnd drops those of
 *   its scope. Tombstones are so bounded by the deletes since the scope's last bookmark (about a minute on
 *   Kubernetes' watch bookmarks) rather than kept until the next resync. Kept: tombstones of unsynced or resyncing
 *   scopes, of changes with no scope, and those whose resourceVersions are not integers (they cannot be ordered).
 * - Resync is mark-and-sweep per watch scope (account, group, kind, watch namespace): SyncStart bumps the scope's
 *   generation, every change stamps the scope's current generation on its object (even when the object itself is
 *   not newer), SyncEnd removes objects and tombstones of the scope still carrying an older generation.
 * - Ops of one apply() call are applied in order, atomically where the backend can.
 */
import { recordedOptions, type RecordedOptions } from '../../shared/account-options.js';
import type { AccountLease, ClaimOutcome, LeaseClaim, LeaseHolder, WriteFence } from '../ownership.js';
import type { SharedText } from './shared-text.js';

export interface ScopeKey {
  account: string;
  group: string;
  kind: string;
  /** The namespace the watch covers; '' for all namespaces and for cluster-scoped kinds. */
  namespace: string;
}

export interface ObjectKey {
  account: string;
  /** undefined matches any group (for bare kind names Clouddriver does not know). */
  group?: string | undefined;
  kind: string;
  namespace: string;
  name: string;
}

/**
 * An object's keys under the cache's named indexes: index name → key ('' or absent: not in that index). Which
 * indexes exist is up to their consumers (IndexDefinition); the cache only keeps and answers them.
 */
export type IndexKeys = Readonly<Record<string, string>>;

export const NO_KEYS: IndexKeys = Object.freeze({});

/** Whether the object is in none of the indexes. */
export function noKeys(keys: IndexKeys): boolean {
  for (const name in keys) if (keys[name]) return false;
  return true;
}

/** The account's settings an index function may read (its registered record; Clouddriver's account options). */
export type IndexOptions = Pick<AccountRecord, 'onlySpinnakerManaged' | 'cacheAllApplicationRelationships'>;

export const DEFAULT_INDEX_OPTIONS: IndexOptions = {
  onlySpinnakerManaged: false,
  cacheAllApplicationRelationships: false,
};

/** The account's choices (its record, as its agent registered it), defaulting to Clouddriver's defaults. */
export function indexOptionsOf(record: Partial<IndexOptions> | undefined): IndexOptions {
  if (!record?.onlySpinnakerManaged && !record?.cacheAllApplicationRelationships) return DEFAULT_INDEX_OPTIONS;
  return {
    onlySpinnakerManaged: record.onlySpinnakerManaged === true,
    cacheAllApplicationRelationships: record.cacheAllApplicationRelationships === true,
  };
}

/**
 * Named indexes, as client-go's Indexers (name → function of the object): the consumer that reads them registers
 * them on the cache (ObjectCache.addIndex) before the first write. The function runs once per object on ingest,
 * where the object is parsed anyway (ingest/object-check.ts): on the event loop, or in a check thread, which loads
 * it by `module` and `export` (a function cannot cross to a thread).
 */
export interface IndexDefinition {
  /** The indexes `keys` fills. */
  readonly names: readonly string[];
  /** The object's keys (absent or '': not in that index); NO_KEYS when in none. */
  keys(group: string, kind: string, manifest: Record<string, unknown>, options: IndexOptions): IndexKeys;
  /** The URL of the module that exports this definition, and the export's name. */
  readonly module: string;
  readonly export: string;
}

/** One (outer key, account, inner key) of live objects in two indexes (indexPairs). */
export interface IndexPair {
  outer: string;
  account: string;
  inner: string;
}

export interface CachedObject {
  account: string;
  group: string;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** The object as JSON text, exactly as stored. */
  json: string;
  /** Set by the index reads (byIndex). */
  index?: IndexKeys;
}

/** Where an object is, without the object. */
export interface ObjectKeyOf {
  account: string;
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

export type ChangeKind = 'ADDED' | 'MODIFIED' | 'DELETED';

export interface StoreChange {
  type: ChangeKind;
  account: string;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** The object as JSON; may be '' for DELETED. */
  json: string;
  /** Keys of the object under the registered indexes (absent: none; a DELETED change leaves every index anyway). */
  index?: IndexKeys;
  /**
   * Set when `json` is a slice of a batch's text: a store that keeps the string in memory holds and releases it
   * there (shared-text.ts), so the batch's text does not outlive most of its objects.
   */
  text?: SharedText;
}

export type StoreOp =
  | { op: 'syncStart'; scope: ScopeKey; version: string }
  | { op: 'syncEnd'; scope: ScopeKey; version: string; resourceVersion: string }
  | { op: 'bookmark'; scope: ScopeKey; version: string; resourceVersion: string }
  | { op: 'change'; change: StoreChange };

export interface ResumePointRecord extends ScopeKey {
  version: string;
  resourceVersion: string;
}

export interface ApplyStats {
  /** Changes that replaced what was stored. */
  applied: number;
  /** Changes ignored because the store already held the same or a newer version. */
  skipped: number;
  /** Objects and tombstones removed by SyncEnd sweeps. */
  swept: number;
  /** Tombstones dropped because their scope's resume point passed them (bookmarks and SyncEnd). */
  pruned: number;
}

export interface KindCount {
  account: string;
  group: string;
  kind: string;
  count: number;
}

/**
 * An account as last registered, persisted so a restarted server still knows who owns a name; with the options its
 * agent (or its dynamic definition) declared (shared/account-options.ts).
 */
export interface AccountRecord extends RecordedOptions {
  name: string;
  agentId: string;
  apiServerHost: string;
  caFingerprint: string;
  kubernetesVersion: string;
  /** ms since the epoch. */
  registeredAt: number;
}

/**
 * A stored record in the current shape: records written before some options existed (or by a replica of the
 * previous version during a rolling upgrade) lack them, and read as their defaults (unrestricted, options off).
 */
export function normalizeAccountRecord(stored: Partial<AccountRecord> & { name: string }): AccountRecord {
  return {
    agentId: '',
    apiServerHost: '',
    caFingerprint: '',
    kubernetesVersion: '',
    registeredAt: 0,
    ...stored,
    ...recordedOptions(stored),
  };
}

export type { AccountLease } from '../ownership.js';

/**
 * What one replica publishes of its agents and of the accounts they hold (replica-views.ts builds and reads the
 * document), so every replica's admin API answers for all of them. Rewritten with every lease heartbeat; a replica
 * that stops publishing (killed) drops out once expiresAt passes.
 */
export interface ReplicaView {
  replica: string;
  replicaUrl: string;
  /** The published document as JSON text, exactly as stored. */
  json: string;
  /** ms at the store's clock. */
  expiresAt: number;
}

export interface ListFilter {
  account: string;
  group?: string | undefined;
  kind?: string | undefined;
  namespace?: string | undefined;
}

/** Called after each successful apply(), once the write is visible to reads of the same store. */
export type AppliedListener = (ops: readonly StoreOp[]) => void;

/**
 * The objects of every cluster, as client-go's Store and gitops-engine's ClusterCache hold them: written by ingest
 * in ordered batches, read by key or by filter, and observed through `onApplied` (what the consistency barrier
 * waits on: ops/barrier.ts).
 */
export interface ObjectCache {
  readonly type: 'memory' | 'mysql' | 'postgres';
  /**
   * Writes the ops in order. With `fence` (a store shared by replicas), only while the writing stream still holds
   * the lease of every account the fence names, checked at the store's clock atomically with the write: otherwise
   * nothing is written and it throws LeaseLost (ownership.ts) naming the accounts lost.
   */
  apply(ops: readonly StoreOp[], fence?: WriteFence): Promise<ApplyStats>;
  /**
   * Runs `listener` after every successful apply(), before it resolves: anything the listener reads from the store
   * already includes the write. Returns the unsubscribe function.
   */
  onApplied(listener: AppliedListener): () => void;
  /**
   * Registers named indexes, before the first write (objects written before would be in none of them). The same
   * definition again is a no-op; a name another definition fills, or one the backend cannot keep, is refused.
   */
  addIndex(definition: IndexDefinition): void;
  /** The registered definitions, whose keys ingest computes for every object. */
  indexes(): readonly IndexDefinition[];
  /** A live (not deleted) object, or undefined. */
  get(key: ObjectKey): Promise<CachedObject | undefined>;
  /** Live objects matching the filter, ordered by group, kind, namespace, name. */
  list(filter: ListFilter): Promise<CachedObject[]>;
  /**
   * Keys of the live objects of one kind, in every account, whose search key
   * `kubernetes.v2:infrastructure:<kindName>:<account>:<namespace>:<name>` contains `text` (exactly, case-sensitive;
   * '' matches all), ordered by account, namespace, name. No JSON is read: /search and /credentials?expand=true
   * need names only.
   */
  searchKeys(kind: { group: string | undefined; kind: string }, kindName: string, text: string): Promise<ObjectKeyOf[]>;
  /** Scopes of the account whose last full sync completed, with the resourceVersion the cache holds. */
  resumePoints(account: string): Promise<ResumePointRecord[]>;
  counts(): Promise<KindCount[]>;
  /** Forget what this process remembers of the account's sync state (another replica may have written it). */
  reloadAccountState(name: string): void;
}

/** Reads by the registered named indexes (IndexDefinition): the views' application and owner lookups. */
export interface ObjectIndex {
  /**
   * Live objects whose key under the index `name` is one of `keys`, of one account if given, each with its index
   * keys; ordered by account, then as list() orders them.
   */
  byIndex(name: string, keys: readonly string[], account?: string): Promise<CachedObject[]>;
  /**
   * Every distinct (outer key, account, inner key) of live objects keyed in both indexes, sorted; of one outer key if
   * given. No JSON is read.
   */
  indexPairs(outer: string, inner: string, outerKey?: string): Promise<IndexPair[]>;
}

/** What the views read: objects and their indexes. */
export type ObjectReads = Pick<ObjectCache, 'type' | 'get' | 'list' | 'searchKeys' | 'counts'> & ObjectIndex;

/**
 * What outlives a stream about each account, shared by the replicas on one store: its record (who registered it,
 * for which cluster), its lease (which replica's agent holds it), and each replica's published view.
 */
export interface AccountStateStore {
  /** Writes the record of an account its holder already holds (its agent's updated options). */
  saveAccount(record: AccountRecord): Promise<void>;
  listAccounts(): Promise<AccountRecord[]>;
  /** Removes the account record, its objects, its sync state and its lease, whoever holds it (the operator's call). */
  dropAccount(name: string): Promise<void>;
  /**
   * The ownership protocol's transitions (ownership.ts), each atomic in the store and judged at the store's clock:
   * a claim is decided from the record and lease as they are at that moment (decideClaim) and, if granted, writes
   * the lease with the next generation and `record` together, so two streams claiming at once get one grant and
   * one refusal, on one replica or on two.
   */
  claimAccount(claim: LeaseClaim, record: AccountRecord): Promise<ClaimOutcome>;
  /** The holder reports the account's state; false when it no longer holds the lease (nothing written). */
  reportAccountState(account: string, holder: LeaseHolder, state: 'ACTIVE' | 'FAILED'): Promise<boolean>;
  /** The holder's agent dropped the account: removed with its cache, only while `holder` holds it. */
  dropHeldAccount(name: string, holder: LeaseHolder): Promise<boolean>;
  /**
   * dropAccount once the account's grace period is over at the store's clock (`orphanGraceOver`: no live lease, and
   * the last one ended at least `graceMs` ago): checked and done atomically, so an agent registering the account on
   * another replica at the same moment either keeps it or finds it gone, never half, and a replica whose own clock
   * runs ahead cannot cut the grace period short.
   */
  dropAccountIfUnheld(name: string, graceMs: number): Promise<boolean>;
  /** The session's stream ended: its leases on these accounts are released (another holder's are kept). */
  releaseAccounts(replica: string, sessionId: string, accounts: readonly string[]): Promise<void>;
  /**
   * Extends the replica's live leases by `leaseMs` from the store's clock and returns those it still holds; an
   * expired lease is not renewed (its holder must claim again), so a replica learns here what it lost.
   */
  renewLeases(replica: string, leaseMs: number): Promise<AccountLease[]>;
  /** Every lease, with the store's clock at the moment it read them (liveness is judged at that clock). */
  listLeases(): Promise<{ now: number; leases: AccountLease[] }>;
  /**
   * Writes the replica's view (replacing its previous one), expiring `ttlMs` from now at the store's clock; views
   * expired for longer than `pruneAfterMs` are deleted.
   */
  publishReplicaView(view: Omit<ReplicaView, 'expiresAt'>, ttlMs: number, pruneAfterMs: number): Promise<void>;
  /** Views not expired at the store's clock, ordered by replica, with that clock as it read them. */
  listReplicaViews(): Promise<{ now: number; views: ReplicaView[] }>;
  /** The replica is stopping: its view goes at once instead of expiring. */
  dropReplicaView(replica: string): Promise<void>;
}

/** A backend's own life: schema, health, connections. */
export interface StoreLifecycle {
  /** Creates or migrates the schema; idempotent. */
  init(): Promise<void>;
  /** Throws when the backend is unreachable (for /readyz). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/**
 * One backend (memory.ts, mysql.ts, postgres.ts) implements every contract over one database; each consumer takes only the one
 * it uses. Composed where the server is built (server.ts), and in the contract suite.
 */
export type StoreBackend = ObjectCache & ObjectIndex & AccountStateStore & StoreLifecycle;

/** The key Clouddriver's search matches a query against. */
export function searchKey(kindName: string, account: string, namespace: string, name: string): string {
  return `kubernetes.v2:infrastructure:${kindName}:${account}:${namespace}:${name}`;
}

export function scopeId(s: ScopeKey): string {
  return `${s.account}\u0000${s.group}\u0000${s.kind.toLowerCase()}\u0000${s.namespace}`;
}
