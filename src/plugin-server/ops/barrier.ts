import { parseResourceKey } from '../../shared/ops/results.js';
import { compareResourceVersions, parseApiVersion, qualifiedKind } from '../../shared/proto.js';
import type { AccountRegistry, RegisteredAccount } from '../accounts.js';
import type { CachedObject, ObjectCache, StoreChange, StoreOp } from '../cache/store.js';

interface Target {
  /** The key as the agent reported it (`apps/v1/Deployment/shop/web`). */
  key: string;
  group: string;
  kind: string;
  namespace: string;
  name: string;
  /** '' = the object must be gone. */
  resourceVersion: string;
}

export type BarrierOutcome =
  { ok: true; waitedFor: string[]; notCached: string[] } | { ok: false; pending: string[]; notCached: string[] };

const idOf = (account: string, group: string, kind: string, namespace: string, name: string): string =>
  `${account}\u0000${group}\u0000${kind.toLowerCase()}\u0000${namespace}\u0000${name}`;

/** At or beyond: unorderable versions (never on etcd) only count when equal. */
function atLeast(have: string, want: string): boolean {
  const c = compareResourceVersions(have, want);
  return c === undefined ? have === want : c >= 0;
}

function satisfiedByChange(t: Target, c: StoreChange): boolean {
  // A delete at or after our write also means the cache has caught up with it (and anything before).
  if (c.type === 'DELETED') return t.resourceVersion === '' || atLeast(c.resourceVersion, t.resourceVersion);
  return t.resourceVersion !== '' && atLeast(c.resourceVersion, t.resourceVersion);
}

function satisfiedByObject(t: Target, o: CachedObject | undefined): boolean {
  return t.resourceVersion === '' ? o === undefined : o !== undefined && atLeast(o.resourceVersion, t.resourceVersion);
}

/**
 * Whether the account's agent caches this object at all: its namespaces/omitNamespaces, its kinds as the agent
 * last reported them (what it actually watches), minus kinds it may not list. Objects it does not cache are not
 * waited for — operations on them still work; reads of them go live.
 */
export function isCached(a: RegisteredAccount | undefined, group: string, kind: string, namespace: string): boolean {
  if (!a) return false;
  const r = a.record;
  if (namespace && r.namespaces.length > 0 && !r.namespaces.includes(namespace)) return false;
  if (namespace && r.omitNamespaces.includes(namespace)) return false;
  const q = qualifiedKind(group, kind).toLowerCase();
  const named = (list: string[]) => list.some((k) => k.toLowerCase() === q || k.toLowerCase() === kind.toLowerCase());
  if (r.kinds.length > 0 && !named(r.kinds)) return false;
  if (r.omitKinds.length > 0 && named(r.omitKinds)) return false;
  const reported = a.reported;
  if (!reported) return true;
  if (reported.forbiddenKinds.some((k) => k.toLowerCase() === q)) return false;
  return reported.kinds.some((k) => k.group === group && k.kind.toLowerCase() === kind.toLowerCase());
}

interface Waiter {
  account: string;
  remaining: Map<string, Target>;
  /** Re-reads one object from the store (after a sweep, and once at the start). */
  check(id: string, t: Target): void;
  settle(ok: boolean): void;
}

/**
 * The consistency barrier: resolves once the cache holds every object an operation wrote at or beyond the
 * resourceVersion the API server gave the agent (or no longer holds the ones it deleted). It listens to store
 * writes — no polling: one read per object when it starts (the stream may already have delivered the change),
 * then one listener for all waiters looks each written object up in an index of waited-for objects (and re-reads
 * waited-for objects of a kind whose relist just swept).
 */
export class CacheBarrier {
  private readonly byObject = new Map<string, Set<Waiter>>();
  private readonly byAccount = new Map<string, Set<Waiter>>();

  constructor(
    private readonly store: Pick<ObjectCache, 'get' | 'onApplied'>,
    private readonly accounts: AccountRegistry,
  ) {
    store.onApplied((ops) => this.onApplied(ops));
  }

  /** Objects some task is waiting for right now. */
  get waiting(): number {
    return this.byObject.size;
  }

  waitFor(account: string, resourceVersions: Record<string, string>, timeoutMs: number): Promise<BarrierOutcome> {
    const notCached: string[] = [];
    const remaining = new Map<string, Target>();
    const registered = this.accounts.get(account);
    for (const [key, resourceVersion] of Object.entries(resourceVersions)) {
      const p = parseResourceKey(key);
      const { group } = parseApiVersion(p.apiVersion);
      if (!isCached(registered, group, p.kind, p.namespace)) {
        notCached.push(key);
        continue;
      }
      const t: Target = { key, group, kind: p.kind, namespace: p.namespace, name: p.name, resourceVersion };
      remaining.set(idOf(account, group, p.kind, p.namespace, p.name), t);
    }
    const waitedFor = [...remaining.values()].map((t) => t.key);
    if (remaining.size === 0) return Promise.resolve({ ok: true, waitedFor, notCached });

    return new Promise<BarrierOutcome>((resolve) => {
      let settled = false;
      const waiter: Waiter = {
        account,
        remaining,
        check: (id, t) => {
          void this.store
            .get({ account, group: t.group, kind: t.kind, namespace: t.namespace, name: t.name })
            .then((o) => {
              if (remaining.get(id) === t && satisfiedByObject(t, o)) {
                remaining.delete(id);
                if (remaining.size === 0) waiter.settle(true);
              }
            })
            .catch(() => undefined);
        },
        settle: (ok) => {
          if (settled) return;
          settled = true;
          this.remove(waiter, waitedFor);
          clearTimeout(timer);
          resolve(
            ok ? { ok, waitedFor, notCached } : { ok, pending: [...remaining.values()].map((t) => t.key), notCached },
          );
        },
      };
      // Index before the first reads: a write landing in between is seen by one or the other.
      for (const id of remaining.keys()) add(this.byObject, id, waiter);
      add(this.byAccount, account, waiter);
      const timer = setTimeout(() => waiter.settle(false), timeoutMs);
      timer.unref();
      for (const [id, t] of remaining) waiter.check(id, t);
    });
  }

  private remove(waiter: Waiter, ids: Iterable<string>): void {
    for (const t of ids) {
      const p = parseResourceKey(t);
      const id = idOf(waiter.account, parseApiVersion(p.apiVersion).group, p.kind, p.namespace, p.name);
      drop(this.byObject, id, waiter);
    }
    drop(this.byAccount, waiter.account, waiter);
  }

  private onApplied(ops: readonly StoreOp[]): void {
    if (this.byObject.size === 0) return;
    const progressed = new Set<Waiter>();
    for (const op of ops) {
      if (op.op === 'change') {
        const c = op.change;
        const id = idOf(c.account, parseApiVersion(c.apiVersion).group, c.kind, c.namespace, c.name);
        const waiters = this.byObject.get(id);
        if (!waiters) continue;
        for (const w of waiters) {
          const t = w.remaining.get(id);
          if (t && satisfiedByChange(t, c)) {
            w.remaining.delete(id);
            progressed.add(w);
          }
        }
      } else if (op.op === 'syncEnd') {
        // A relist's sweep removes objects without a DELETED change.
        for (const w of this.byAccount.get(op.scope.account) ?? []) {
          for (const [id, t] of w.remaining) {
            if (t.group === op.scope.group && t.kind.toLowerCase() === op.scope.kind.toLowerCase()) w.check(id, t);
          }
        }
      }
    }
    for (const w of progressed) if (w.remaining.size === 0) w.settle(true);
  }
}

function add<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (set) set.add(value);
  else map.set(key, new Set([value]));
}

function drop<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const set = map.get(key);
  if (!set) return;
  set.delete(value);
  if (set.size === 0) map.delete(key);
}
