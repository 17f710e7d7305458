import type {
  AccountLease,
  AccountRecord,
  AppCluster,
  ApplyStats,
  CachedObject,
  CacheStore,
  KindCount,
  ListFilter,
  ReplicaView,
  ObjectKey,
  ObjectKeyOf,
  ResumePointRecord,
  StoreOp,
} from '../cache/store.js';

export type StoreListener = (ops: readonly StoreOp[]) => void;

/**
 * The cache store with a hook after every successful write: what the consistency barrier waits on. Listeners run
 * after apply() has resolved, so anything they read from the store already includes the write.
 */
export class WatchedStore implements CacheStore {
  private readonly listeners = new Set<StoreListener>();

  constructor(readonly inner: CacheStore) {}

  get type(): CacheStore['type'] {
    return this.inner.type;
  }

  onApplied(listener: StoreListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  init(): Promise<void> {
    return this.inner.init();
  }

  async apply(ops: readonly StoreOp[]): Promise<ApplyStats> {
    const stats = await this.inner.apply(ops);
    for (const l of this.listeners) l(ops);
    return stats;
  }

  get(key: ObjectKey): Promise<CachedObject | undefined> {
    return this.inner.get(key);
  }

  list(filter: ListFilter): Promise<CachedObject[]> {
    return this.inner.list(filter);
  }

  listApplication(app: string): Promise<CachedObject[]> {
    return this.inner.listApplication(app);
  }

  listOwned(account: string, ownerUids: readonly string[]): Promise<CachedObject[]> {
    return this.inner.listOwned(account, ownerUids);
  }

  searchKeys(
    kind: { group: string | undefined; kind: string },
    kindName: string,
    text: string,
  ): Promise<ObjectKeyOf[]> {
    return this.inner.searchKeys(kind, kindName, text);
  }

  applicationClusters(app?: string): Promise<AppCluster[]> {
    return this.inner.applicationClusters(app);
  }

  resumePoints(account: string): Promise<ResumePointRecord[]> {
    return this.inner.resumePoints(account);
  }

  counts(): Promise<KindCount[]> {
    return this.inner.counts();
  }

  saveAccount(record: AccountRecord): Promise<void> {
    return this.inner.saveAccount(record);
  }

  listAccounts(): Promise<AccountRecord[]> {
    return this.inner.listAccounts();
  }

  holdAccount(lease: AccountLease): Promise<void> {
    return this.inner.holdAccount(lease);
  }

  releaseAccounts(replica: string, sessionId: string, accounts: readonly string[], at: number): Promise<void> {
    return this.inner.releaseAccounts(replica, sessionId, accounts, at);
  }

  renewLeases(replica: string, expiresAt: number): Promise<number> {
    return this.inner.renewLeases(replica, expiresAt);
  }

  listLeases(): Promise<AccountLease[]> {
    return this.inner.listLeases();
  }

  publishReplicaView(view: ReplicaView, pruneBefore: number): Promise<void> {
    return this.inner.publishReplicaView(view, pruneBefore);
  }

  listReplicaViews(now: number): Promise<ReplicaView[]> {
    return this.inner.listReplicaViews(now);
  }

  dropReplicaView(replica: string): Promise<void> {
    return this.inner.dropReplicaView(replica);
  }

  dropAccountIfUnheld(name: string, now: number): Promise<boolean> {
    return this.inner.dropAccountIfUnheld(name, now);
  }

  reloadAccountState(name: string): void {
    this.inner.reloadAccountState(name);
  }

  dropAccount(name: string): Promise<void> {
    return this.inner.dropAccount(name);
  }

  ping(): Promise<void> {
    return this.inner.ping();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}
