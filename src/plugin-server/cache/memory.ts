import { compareResourceVersions, isNewerResourceVersion, parseApiVersion } from '../../shared/proto.js';
import {
  decideClaim,
  fencedOut,
  heldBy,
  LeaseLost,
  orphanGraceOver,
  release,
  renew,
  reportState,
  type ClaimOutcome,
  type LeaseClaim,
  type LeaseHolder,
  type WriteFence,
} from '../ownership.js';
import {
  type AccountLease,
  type AccountRecord,
  type ApplyStats,
  type CachedObject,
  type IndexDefinition,
  type IndexKeys,
  type IndexPair,
  type ObjectKeyOf,
  type StoreBackend,
  type AppliedListener,
  type KindCount,
  type ReplicaView,
  type ListFilter,
  type ObjectKey,
  type ResumePointRecord,
  type StoreChange,
  type StoreOp,
  searchKey,
} from './store.js';
import { ScopeTable, tombstonesPrunable, type ScopeState } from './scopes.js';
import { RefIndex, type KindId, type NameId } from './memory-index.js';
import { IndexRegistry } from './index-registry.js';
import type { SharedText } from './shared-text.js';
import { AppliedListeners } from './applied-listeners.js';

interface Entry {
  group: string;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid: string;
  resourceVersion: string;
  /** '' for tombstones. */
  json: string;
  deleted: boolean;
  /** Generation of the entry's scope when the entry was last seen. */
  gen: number;
  /** undefined for tombstones and objects with no index keys. */
  index: IndexKeys | undefined;
  /** Set while `json` is a slice of a batch's text (shared-text.ts). */
  text: SharedText | undefined;
}

/** Where changes of one (account, apiVersion, kind, namespace) go. */
interface Target {
  group: string;
  kid: KindId;
  names: Map<NameId, Entry>;
  scope: ScopeState | undefined;
}

function kindId(group: string, kind: string): KindId {
  return `${group}\u0000${kind.toLowerCase()}`;
}

function nameId(namespace: string, name: string): NameId {
  return `${namespace}\u0000${name}`;
}

function maxResourceVersion(a: string, b: string): string {
  if (!a) return b;
  const c = compareResourceVersions(b, a);
  return c === undefined || c > 0 ? b : a;
}

/**
 * The embedded default store: everything in process memory, nothing survives a restart (agents then relist).
 * Objects are kept as JSON text, parsed only when read, which is both smaller and faster than object graphs.
 */
export class MemoryCacheStore implements StoreBackend {
  readonly type = 'memory' as const;
  private readonly applied = new AppliedListeners();
  private readonly objects = new Map<string, Map<KindId, Map<NameId, Entry>>>();
  private readonly scopes = new ScopeTable();
  private readonly accounts = new Map<string, AccountRecord>();
  private readonly leases = new Map<string, AccountLease>();
  private readonly replicaViews = new Map<string, ReplicaView>();
  private readonly registry = new IndexRegistry();
  /** Per registered index: key → account → its objects. */
  private readonly byIndexName = new Map<string, RefIndex>();
  /** The RefIndex of each registered name, in registration order (walked on every indexed write). */
  private refs: [name: string, ref: RefIndex][] = [];
  /**
   * Where the previous change went: consecutive changes almost always share account, kind and namespace (a list
   * or a watch), so the group parse, scope lookup and map walk are done once per run instead of once per change.
   * Cleared whenever scopes or per-account maps are added or removed.
   */
  private last: { account: string; apiVersion: string; kind: string; namespace: string; target: Target } | undefined;
  /**
   * The tombstones of each kind map, so dropping those a resume point has passed does not walk the live objects;
   * weak, so an account's maps take theirs with them when dropped.
   */
  private readonly tombstones = new WeakMap<Map<NameId, Entry>, Set<NameId>>();

  /** @param now this store's clock (ms), which every lease decision reads. */
  constructor(private readonly now: () => number = Date.now) {}

  async init(): Promise<void> {}

  async apply(ops: readonly StoreOp[], fence?: WriteFence): Promise<ApplyStats> {
    // Checked before anything is written, in the same synchronous step as the write (one replica's server passes
    // no fence: nothing to fence; registries sharing this store in tests do).
    if (fence) {
      const lost = fencedOut(fence, (a) => this.leases.get(a), this.now());
      if (lost.length > 0) throw new LeaseLost(lost);
    }
    const stats: ApplyStats = { applied: 0, skipped: 0, swept: 0, pruned: 0 };
    // The batch texts this write sliced from; the changes of one batch are consecutive.
    let text: SharedText | undefined;
    for (const op of ops) {
      if (op.op === 'change' && op.change.text !== text) {
        text?.settle();
        text = op.change.text;
      }
      switch (op.op) {
        case 'syncStart': {
          this.last = undefined;
          const s = this.scopes.ensure(op.scope, op.version);
          s.gen += 1;
          s.syncing = true;
          s.synced = false;
          break;
        }
        case 'syncEnd': {
          this.last = undefined;
          const s = this.scopes.get(op.scope);
          if (!s) {
            // A SyncEnd without SyncStart (e.g. replayed after a server restart): nothing to sweep safely.
            this.scopes.ensure(op.scope, op.version).resourceVersion = op.resourceVersion;
            break;
          }
          stats.swept += this.sweep(s);
          s.syncing = false;
          s.synced = true;
          s.version = op.version || s.version;
          s.resourceVersion = op.resourceVersion;
          stats.pruned += this.pruneTombstones(s);
          break;
        }
        case 'bookmark': {
          const s = this.scopes.get(op.scope);
          if (s && s.synced && !s.syncing) {
            s.resourceVersion = maxResourceVersion(s.resourceVersion, op.resourceVersion);
            stats.pruned += this.pruneTombstones(s);
          }
          break;
        }
        case 'change':
          if (this.applyChange(op.change)) stats.applied += 1;
          else stats.skipped += 1;
          break;
      }
    }
    text?.settle();
    this.applied.notify(ops);
    return stats;
  }

  onApplied(listener: AppliedListener): () => void {
    return this.applied.add(listener);
  }

  addIndex(definition: IndexDefinition): void {
    this.registry.add(definition, this.objects.size > 0);
    for (const name of definition.names) if (!this.byIndexName.has(name)) this.byIndexName.set(name, new RefIndex());
    this.refs = [...this.byIndexName];
  }

  indexes(): readonly IndexDefinition[] {
    return this.registry.list();
  }

  private target(c: StoreChange): Target {
    const l = this.last;
    if (
      l &&
      l.account === c.account &&
      l.apiVersion === c.apiVersion &&
      l.kind === c.kind &&
      l.namespace === c.namespace
    ) {
      return l.target;
    }
    const { group } = parseApiVersion(c.apiVersion);
    let kinds = this.objects.get(c.account);
    if (!kinds) this.objects.set(c.account, (kinds = new Map()));
    const kid = kindId(group, c.kind);
    let names = kinds.get(kid);
    if (!names) kinds.set(kid, (names = new Map()));
    const target = { group, kid, names, scope: this.scopes.of(c.account, group, c.kind, c.namespace) };
    this.last = { account: c.account, apiVersion: c.apiVersion, kind: c.kind, namespace: c.namespace, target };
    return target;
  }

  private applyChange(c: StoreChange): boolean {
    const { group, kid, names, scope: s } = this.target(c);
    const gen = s?.gen ?? 0;
    if (s && s.synced && !s.syncing) s.resourceVersion = maxResourceVersion(s.resourceVersion, c.resourceVersion);
    const nid = nameId(c.namespace, c.name);
    const existing = names.get(nid);
    if (existing && !isNewerResourceVersion(c.resourceVersion, existing.resourceVersion)) {
      existing.gen = gen;
      return false;
    }
    const deleted = c.type === 'DELETED';
    if (existing?.index) this.unindex(c.account, kid, nid, existing.index);
    const index = deleted ? undefined : c.index;
    if (index) this.reindex(c.account, kid, nid, index);
    if (deleted) this.tombstonesOf(names).add(nid);
    else if (existing?.deleted) this.tombstones.get(names)?.delete(nid);
    existing?.text?.release(existing);
    const entry: Entry = {
      group,
      apiVersion: c.apiVersion,
      kind: c.kind,
      namespace: c.namespace,
      name: c.name,
      uid: c.uid,
      resourceVersion: c.resourceVersion,
      json: deleted ? '' : c.json,
      deleted,
      gen,
      index,
      text: undefined,
    };
    if (!deleted) c.text?.hold(entry);
    names.set(nid, entry);
    return true;
  }

  private reindex(account: string, kid: KindId, nid: NameId, k: IndexKeys): void {
    for (const [name, ref] of this.refs) {
      const key = k[name];
      if (key) ref.add(key, account, kid, nid);
    }
  }

  private unindex(account: string, kid: KindId, nid: NameId, k: IndexKeys): void {
    for (const [name, ref] of this.refs) {
      const key = k[name];
      if (key) ref.remove(key, account, kid, nid);
    }
  }

  private sweep(s: ScopeState): number {
    const names = this.objects.get(s.key.account)?.get(kindId(s.key.group, s.key.kind));
    if (!names) return 0;
    let swept = 0;
    for (const [id, e] of names) {
      if (e.gen < s.gen && (s.key.namespace === '' || e.namespace === s.key.namespace)) {
        if (e.index) this.unindex(s.key.account, kindId(s.key.group, s.key.kind), id, e.index);
        if (e.deleted) this.tombstones.get(names)?.delete(id);
        e.text?.release(e);
        names.delete(id);
        swept += 1;
      }
    }
    return swept;
  }

  private tombstonesOf(names: Map<NameId, Entry>): Set<NameId> {
    let t = this.tombstones.get(names);
    if (!t) this.tombstones.set(names, (t = new Set()));
    return t;
  }

  /** Drops the scope's tombstones at or below its resume point (store.ts: why they are no longer needed). */
  private pruneTombstones(s: ScopeState): number {
    if (!tombstonesPrunable(s, this.scopes)) return 0;
    const names = this.objects.get(s.key.account)?.get(kindId(s.key.group, s.key.kind));
    const tombs = names && this.tombstones.get(names);
    if (!names || !tombs) return 0;
    let pruned = 0;
    for (const id of tombs) {
      const e = names.get(id);
      if (!e || (s.key.namespace !== '' && e.namespace !== s.key.namespace)) continue;
      const c = compareResourceVersions(e.resourceVersion, s.resourceVersion);
      if (c === undefined || c > 0) continue;
      names.delete(id);
      tombs.delete(id);
      pruned += 1;
    }
    return pruned;
  }

  async get(key: ObjectKey): Promise<CachedObject | undefined> {
    const kinds = this.objects.get(key.account);
    if (!kinds) return undefined;
    const nid = nameId(key.namespace, key.name);
    if (key.group !== undefined) {
      const e = kinds.get(kindId(key.group, key.kind))?.get(nid);
      return e && !e.deleted ? toCached(key.account, e) : undefined;
    }
    const suffix = `\u0000${key.kind.toLowerCase()}`;
    for (const [kid, names] of [...kinds].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!kid.endsWith(suffix)) continue;
      const e = names.get(nid);
      if (e && !e.deleted) return toCached(key.account, e);
    }
    return undefined;
  }

  async list(filter: ListFilter): Promise<CachedObject[]> {
    const kinds = this.objects.get(filter.account);
    if (!kinds) return [];
    const out: CachedObject[] = [];
    // With group and kind known, only that kind's map is read (search and the views list one kind at a time).
    const only =
      filter.group !== undefined && filter.kind !== undefined
        ? kinds.get(kindId(filter.group, filter.kind))
        : undefined;
    const maps = only ? [only] : filter.group !== undefined && filter.kind !== undefined ? [] : kinds.values();
    for (const names of maps) {
      for (const e of names.values()) {
        if (e.deleted) continue;
        if (filter.group !== undefined && e.group !== filter.group) continue;
        if (filter.kind !== undefined && e.kind.toLowerCase() !== filter.kind.toLowerCase()) continue;
        if (filter.namespace !== undefined && e.namespace !== filter.namespace) continue;
        out.push(toCached(filter.account, e));
      }
    }
    return out.sort(compareCached);
  }

  async searchKeys(
    kind: { group: string | undefined; kind: string },
    kindName: string,
    text: string,
  ): Promise<ObjectKeyOf[]> {
    const out: ObjectKeyOf[] = [];
    const suffix = `\u0000${kind.kind.toLowerCase()}`;
    for (const account of [...this.objects.keys()].sort()) {
      const kinds = this.objects.get(account)!;
      const prefix = searchKey(kindName, account, '', '').slice(0, -1);
      const start = out.length;
      for (const [kid, names] of kinds) {
        if (kind.group !== undefined ? kid !== kindId(kind.group, kind.kind) : !kid.endsWith(suffix)) continue;
        for (const e of names.values()) {
          if (e.deleted || !`${prefix}${e.namespace}:${e.name}`.includes(text)) continue;
          out.push({ account, group: e.group, kind: e.kind, namespace: e.namespace, name: e.name });
        }
      }
      const mine = out.splice(start).sort((a, b) => cmp(a.namespace, b.namespace) || cmp(a.name, b.name));
      out.push(...mine);
    }
    return out;
  }

  async byIndex(name: string, keys: readonly string[], account?: string): Promise<CachedObject[]> {
    this.registry.require(name);
    const ref = this.byIndexName.get(name)!;
    const out: CachedObject[] = [];
    for (const key of new Set(keys)) {
      const accounts = ref.get(key);
      if (!accounts) continue;
      if (account !== undefined) {
        const kinds = accounts.get(account);
        if (kinds) this.collect(account, kinds, out);
      } else {
        for (const [a, kinds] of accounts) this.collect(a, kinds, out);
      }
    }
    // Several keys may name one object (it is in the index once per key it has: one).
    return out.sort((a, b) => (a.account < b.account ? -1 : a.account > b.account ? 1 : compareCached(a, b)));
  }

  private collect(account: string, kinds: ReadonlyMap<KindId, ReadonlySet<NameId>>, out: CachedObject[]): void {
    const objects = this.objects.get(account);
    for (const [kid, nids] of kinds) {
      const names = objects?.get(kid);
      for (const nid of nids) {
        const e = names?.get(nid);
        if (e && !e.deleted) out.push({ ...toCached(account, e), ...(e.index ? { index: e.index } : {}) });
      }
    }
  }

  /** Read by walking the objects of one outer key, or of the whole inner index (server groups and managers only). */
  async indexPairs(outer: string, inner: string, outerKey?: string): Promise<IndexPair[]> {
    this.registry.require(outer);
    this.registry.require(inner);
    const seen = new Map<string, IndexPair>();
    const visit = (walked: string, key: string, account: string, kinds: ReadonlyMap<KindId, ReadonlySet<NameId>>) => {
      const objects = this.objects.get(account);
      for (const [kid, nids] of kinds) {
        const names = objects?.get(kid);
        for (const nid of nids) {
          const e = names?.get(nid);
          const other = e && !e.deleted ? e.index?.[walked === outer ? inner : outer] : undefined;
          if (!other) continue;
          const pair = walked === outer ? { outer: key, account, inner: other } : { outer: other, account, inner: key };
          seen.set(`${pair.outer}\u0000${account}\u0000${pair.inner}`, pair);
        }
      }
    };
    if (outerKey !== undefined) {
      for (const [account, kinds] of this.byIndexName.get(outer)!.get(outerKey) ?? []) {
        visit(outer, outerKey, account, kinds);
      }
    } else {
      for (const [key, accounts] of this.byIndexName.get(inner)!.entries()) {
        for (const [account, kinds] of accounts) visit(inner, key, account, kinds);
      }
    }
    return [...seen.values()].sort(
      (a, b) => cmp(a.outer, b.outer) || cmp(a.account, b.account) || cmp(a.inner, b.inner),
    );
  }

  async resumePoints(account: string): Promise<ResumePointRecord[]> {
    return this.scopes.resumePoints(account);
  }

  async counts(): Promise<KindCount[]> {
    const out: KindCount[] = [];
    for (const [account, kinds] of this.objects) {
      for (const names of kinds.values()) {
        let count = 0;
        let first: Entry | undefined;
        for (const e of names.values()) {
          if (e.deleted) continue;
          count += 1;
          first ??= e;
        }
        if (first) out.push({ account, group: first.group, kind: first.kind, count });
      }
    }
    return out;
  }

  async saveAccount(record: AccountRecord): Promise<void> {
    this.accounts.set(record.name, structuredClone(record));
  }

  async listAccounts(): Promise<AccountRecord[]> {
    return [...this.accounts.values()].map((r) => structuredClone(r)).sort((a, b) => (a.name < b.name ? -1 : 1));
  }

  async dropAccount(name: string): Promise<void> {
    this.last = undefined;
    // A batch may carry several accounts' objects: the others' must not keep its text alive on their own.
    for (const names of this.objects.get(name)?.values() ?? []) for (const e of names.values()) e.text?.release(e);
    this.accounts.delete(name);
    this.objects.delete(name);
    for (const [, ref] of this.refs) ref.dropInner(name);
    this.scopes.dropAccount(name);
    this.leases.delete(name);
  }

  // Ownership (ownership.ts): each transition is one synchronous step on this process's maps, so it is atomic, and
  // judged at this store's clock (one replica holds this store).
  async claimAccount(claim: LeaseClaim, record: AccountRecord): Promise<ClaimOutcome> {
    const outcome = decideClaim(
      claim,
      { record: this.accounts.get(claim.account), lease: this.leases.get(claim.account) },
      this.now(),
    );
    if (!outcome.granted) {
      if (outcome.code === 'standby' && outcome.handoff) this.leases.set(claim.account, { ...outcome.handoff });
      return outcome;
    }
    this.leases.set(claim.account, { ...outcome.lease });
    this.accounts.set(record.name, structuredClone(record));
    return outcome;
  }

  async reportAccountState(account: string, holder: LeaseHolder, state: 'ACTIVE' | 'FAILED'): Promise<boolean> {
    const next = reportState(this.leases.get(account), holder, state, this.now());
    if (next) this.leases.set(account, next);
    return next !== undefined;
  }

  async dropHeldAccount(name: string, holder: LeaseHolder): Promise<boolean> {
    if (!heldBy(this.leases.get(name), holder, this.now())) return false;
    await this.dropAccount(name);
    return true;
  }

  async releaseAccounts(replica: string, sessionId: string, accounts: readonly string[]): Promise<void> {
    const now = this.now();
    for (const a of accounts) {
      const l = this.leases.get(a);
      const next = l && release(l, replica, sessionId, now);
      if (next) this.leases.set(a, next);
    }
  }

  async renewLeases(replica: string, leaseMs: number): Promise<AccountLease[]> {
    const now = this.now();
    const held: AccountLease[] = [];
    for (const [account, l] of this.leases) {
      const next = renew(l, replica, leaseMs, now);
      if (!next) continue;
      this.leases.set(account, next);
      held.push({ ...next });
    }
    return held;
  }

  async listLeases(): Promise<{ now: number; leases: AccountLease[] }> {
    return { now: this.now(), leases: [...this.leases.values()].map((l) => ({ ...l })) };
  }

  async dropAccountIfUnheld(name: string, graceMs: number): Promise<boolean> {
    if (!orphanGraceOver(this.leases.get(name), graceMs, this.now())) return false;
    await this.dropAccount(name);
    return true;
  }

  async publishReplicaView(view: Omit<ReplicaView, 'expiresAt'>, ttlMs: number, pruneAfterMs: number): Promise<void> {
    const now = this.now();
    for (const [replica, v] of this.replicaViews) {
      if (v.expiresAt < now - pruneAfterMs) this.replicaViews.delete(replica);
    }
    this.replicaViews.set(view.replica, { ...view, expiresAt: now + ttlMs });
  }

  async listReplicaViews(): Promise<{ now: number; views: ReplicaView[] }> {
    const now = this.now();
    const views = [...this.replicaViews.values()]
      .filter((v) => v.expiresAt > now)
      .sort((a, b) => (a.replica < b.replica ? -1 : a.replica > b.replica ? 1 : 0))
      .map((v) => ({ ...v }));
    return { now, views };
  }

  async dropReplicaView(replica: string): Promise<void> {
    this.replicaViews.delete(replica);
  }

  reloadAccountState(): void {
    // The memory store is this process's own: nothing another replica could have written.
  }

  async ping(): Promise<void> {}

  async close(): Promise<void> {}
}

function toCached(account: string, e: Entry): CachedObject {
  return {
    account,
    group: e.group,
    apiVersion: e.apiVersion,
    kind: e.kind,
    namespace: e.namespace,
    name: e.name,
    uid: e.uid,
    resourceVersion: e.resourceVersion,
    json: e.json,
  };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The order of reads: group, kind (case-insensitive), namespace, name — as the SQL stores' ORDER BY, and as the
 * key `group\0kind\0namespace\0name` compared whole, since ingest lets no NUL into these fields (wire.ts). Field by
 * field, because sorting a list compares each object some log n times and building two key strings per comparison
 * was most of a large list's sort; fields one run of changes shares are one string, so `===` settles them at once.
 */
export function compareCached(a: CachedObject, b: CachedObject): number {
  if (a.group !== b.group) return cmp(a.group, b.group);
  if (a.kind !== b.kind) {
    const c = cmp(a.kind.toLowerCase(), b.kind.toLowerCase());
    if (c !== 0) return c;
  }
  return a.namespace !== b.namespace ? cmp(a.namespace, b.namespace) : cmp(a.name, b.name);
}
