import { parseResourceKey } from '../../shared/ops/results.js';
import { compareResourceVersions, parseApiVersion, qualifiedKind } from '../../shared/proto.js';
import type { AccountRegistry, RegisteredAccount } from '../accounts.js';
import type { CachedObject, StoreChange, StoreOp } from '../cache/store.js';
import type { WatchedStore } from './watched-store.js';

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

/**
 * The consistency barrier: resolves once the cache holds every object an operation wrote at or beyond the
 * resourceVersion the API server gave the agent (or no longer holds the ones it deleted). It listens to store
 * writes — no polling: one read per object when it starts (the stream may already have delivered the change),
 * then only the writes that touch a waited-for object (and sweeps of its kind) are looked at.
 */
export class CacheBarrier {
  constructor(
    private readonly store: WatchedStore,
    private readonly accounts: AccountRegistry,
  ) {}

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
      const settle = (ok: boolean): void => {
        if (settled) return;
        settled = true;
        unsubscribe();
        clearTimeout(timer);
        resolve(
          ok ? { ok, waitedFor, notCached } : { ok, pending: [...remaining.values()].map((t) => t.key), notCached },
        );
      };
      const check = (id: string, t: Target): void => {
        void this.store
          .get({ account, group: t.group, kind: t.kind, namespace: t.namespace, name: t.name })
          .then((o) => {
            if (remaining.get(id) === t && satisfiedByObject(t, o)) {
              remaining.delete(id);
              if (remaining.size === 0) settle(true);
            }
          })
          .catch(() => undefined);
      };
      const onApplied = (ops: readonly StoreOp[]): void => {
        for (const op of ops) {
          if (op.op === 'change') {
            const c = op.change;
            if (c.account !== account) continue;
            const id = idOf(account, parseApiVersion(c.apiVersion).group, c.kind, c.namespace, c.name);
            const t = remaining.get(id);
            if (t && satisfiedByChange(t, c)) remaining.delete(id);
          } else if (op.op === 'syncEnd' && op.scope.account === account) {
            // A relist's sweep removes objects without a DELETED change.
            for (const [id, t] of remaining) {
              if (t.group === op.scope.group && t.kind.toLowerCase() === op.scope.kind.toLowerCase()) check(id, t);
            }
          }
        }
        if (remaining.size === 0) settle(true);
      };
      // Subscribe before the first reads: a write landing in between is seen by one or the other.
      const unsubscribe = this.store.onApplied(onApplied);
      const timer = setTimeout(() => settle(false), timeoutMs);
      timer.unref();
      for (const [id, t] of remaining) check(id, t);
    });
  }
}
