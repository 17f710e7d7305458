import { describe, expect, it } from 'vitest';
import { compareCached, MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import type { CachedObject } from '../../../src/plugin-server/cache/store.js';
import { storeChange } from '../../infra/records.js';
import { cacheStoreContract } from './store-contract.js';

cacheStoreContract('memory', {
  create: async () => new MemoryCacheStore(),
  destroy: async (store) => store.close(),
});

describe('memory store read order', () => {
  // The order reads have always had: the key group\0kind(lower-case)\0namespace\0name compared as one string.
  const keyOf = (o: Pick<CachedObject, 'group' | 'kind' | 'namespace' | 'name'>) =>
    `${o.group}\u0000${o.kind.toLowerCase()}\u0000${o.namespace}\u0000${o.name}`;
  const byKey = (a: CachedObject, b: CachedObject) => (keyOf(a) < keyOf(b) ? -1 : keyOf(a) > keyOf(b) ? 1 : 0);

  // Prefixes of each other, separators that sort below and above letters, upper case, non-ASCII and an astral
  // character (UTF-16 code unit order, as before).
  const groups = ['', 'apps', 'app', 'apps.example.com', 'apps-x', 'a.b'];
  const kinds = ['ConfigMap', 'configmap', 'Config', 'ConfigMapX', 'Ärger', 'Zeta'];
  const namespaces = ['', 'ns', 'ns-a', 'ns.a', 'nsa', 'Ns', 'ñs'];
  const names = ['a', 'a-b', 'a.b', 'a:b', 'a/b', 'ab', 'A', 'é', 'z\u{1F600}', 'z'];

  it('compares as the whole key does, on keys with separators, prefixes and non-ASCII', () => {
    const objects: CachedObject[] = [];
    let i = 0;
    for (const group of groups)
      for (const kind of kinds)
        for (const namespace of namespaces.slice(i % 3, (i % 3) + 3))
          for (const name of names.slice(i++ % 4, (i % 4) + 6)) {
            objects.push({
              account: 'dev',
              group,
              apiVersion: group ? `${group}/v1` : 'v1',
              kind,
              namespace,
              name,
              uid: '',
              resourceVersion: '1',
              json: '{}',
            });
          }
    // Every pair, both ways: the sign, not only a sorted outcome, must agree.
    const disagree: string[] = [];
    for (const a of objects) {
      for (const b of objects) {
        if (Math.sign(compareCached(a, b)) !== byKey(a, b)) disagree.push(`${keyOf(a)} vs ${keyOf(b)}`);
      }
    }
    expect(objects.length ** 2).toBeGreaterThan(100_000);
    expect(disagree.slice(0, 5)).toEqual([]);
  });

  it('lists in that order', async () => {
    const store = new MemoryCacheStore();
    const ops = [];
    let rv = 1;
    for (const [apiVersion, kind] of [
      ['apps/v1', 'Deployment'],
      ['v1', 'ConfigMap'],
      ['app/v1', 'Deployment'],
      ['v1', 'Config'],
    ] as const) {
      for (const namespace of namespaces) {
        for (const name of names) {
          ops.push(storeChange(name, String(rv++), { apiVersion, kind, namespace }));
        }
      }
    }
    await store.apply(ops.reverse());
    const listed = await store.list({ account: 'dev' });
    expect(listed).toHaveLength(ops.length);
    expect(listed.map(keyOf)).toEqual(listed.map(keyOf).sort());
  });
});
