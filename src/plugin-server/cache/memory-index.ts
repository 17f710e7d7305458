/**
 * The memory store's named indexes (store.ts IndexDefinition): per index, object ids grouped by key then account, so
 * the views read what they need without walking the whole cache.
 */

/** group\0kind(lower-case) */
export type KindId = string;
/** namespace\0name */
export type NameId = string;

/** outer key (the index key) → inner key (the account) → kind → names. */
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

  entries(): IterableIterator<[string, ReadonlyMap<string, ReadonlyMap<KindId, ReadonlySet<NameId>>>]> {
    return this.map.entries();
  }

  dropInner(inner: string): void {
    for (const [outer, a] of this.map) {
      a.delete(inner);
      if (a.size === 0) this.map.delete(outer);
    }
  }
}
