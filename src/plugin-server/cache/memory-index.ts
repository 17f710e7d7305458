/**
 * The memory store's secondary indexes: object ids grouped under two keys (application → account, or account →
 * owner uid), and how many server groups and managers each (application, account, cluster) has, so the views and
 * /applications read what they need without walking the whole cache.
 */

/** group\0kind(lower-case) */
export type KindId = string;
/** namespace\0name */
export type NameId = string;

/** outer key → inner key → kind → names. */
export class RefIndex {
  private readonly map = new Map<string, Map<string, Map<KindId, Set<NameId>>>>();

  add(outer: string, inner: string, kid: KindId, nid: NameId): void {
    let a = this.map.get(outer);
    if (!a) this.map.set(outer, (a = new Map()));
    let k = a.get(inner);
    if (!k) a.set(inner, (k = new Map()));
    let n = k.get(kid);
    if (!n) k.set(kid, (n = new Set()));
    n.add(nid);
  }

  remove(outer: string, inner: string, kid: KindId, nid: NameId): void {
    const a = this.map.get(outer);
    const k = a?.get(inner);
    const n = k?.get(kid);
    if (!n || !n.delete(nid)) return;
    if (n.size === 0) k!.delete(kid);
    if (k!.size === 0) a!.delete(inner);
    if (a!.size === 0) this.map.delete(outer);
  }

  get(outer: string): ReadonlyMap<string, ReadonlyMap<KindId, ReadonlySet<NameId>>> | undefined {
    return this.map.get(outer);
  }

  dropOuter(outer: string): void {
    this.map.delete(outer);
  }

  dropInner(inner: string): void {
    for (const [outer, a] of this.map) {
      a.delete(inner);
      if (a.size === 0) this.map.delete(outer);
    }
  }
}

/** app → account → cluster → number of live server groups and managers. */
export class ClusterCounts {
  private readonly map = new Map<string, Map<string, Map<string, number>>>();

  add(app: string, account: string, cluster: string, delta: 1 | -1): void {
    let a = this.map.get(app);
    if (!a) this.map.set(app, (a = new Map()));
    let c = a.get(account);
    if (!c) a.set(account, (c = new Map()));
    const n = (c.get(cluster) ?? 0) + delta;
    if (n > 0) {
      c.set(cluster, n);
      return;
    }
    c.delete(cluster);
    if (c.size === 0) a.delete(account);
    if (a.size === 0) this.map.delete(app);
  }

  dropAccount(account: string): void {
    for (const [app, a] of this.map) {
      a.delete(account);
      if (a.size === 0) this.map.delete(app);
    }
  }

  *entries(only?: string): Generator<{ app: string; account: string; cluster: string }> {
    const apps = only === undefined ? this.map : new Map([[only, this.map.get(only)]]);
    for (const [app, a] of apps) {
      if (!a) continue;
      for (const [account, c] of a) for (const cluster of c.keys()) yield { app, account, cluster };
    }
  }
}
