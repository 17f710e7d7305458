/**
 * The consistency barrier against the real in-memory store and account registry: it resolves only once the store
 * holds each written object at or beyond its resourceVersion (or no longer holds a deleted one), never on an older
 * write, and gives up after its bound naming what it still waits for.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import type { StoreOp } from '../../../src/plugin-server/cache/store.js';
import { CacheBarrier } from '../../../src/plugin-server/ops/index.js';
import { account } from './helpers.js';

async function setup(kinds: string[] = []) {
  const store = new MemoryCacheStore();
  await store.init();
  const accounts = new AccountRegistry(store, pino({ level: 'silent' }), { gracePeriodMs: 60_000 });
  await accounts.register({ id: 's1', agentId: 'a1' }, { ...account('dev'), kinds });
  return { store, barrier: new CacheBarrier(store, accounts) };
}

const write = (type: 'ADDED' | 'MODIFIED' | 'DELETED', name: string, rv: string): StoreOp => ({
  op: 'change',
  change: {
    type,
    account: 'dev',
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    namespace: 'shop',
    name,
    uid: `uid-${name}`,
    resourceVersion: rv,
    json: type === 'DELETED' ? '' : JSON.stringify({ metadata: { name, namespace: 'shop', resourceVersion: rv } }),
  },
});

describe('CacheBarrier', () => {
  it('resolves at once when the store already holds the version', async () => {
    const { store, barrier } = await setup();
    await store.apply([write('ADDED', 'web', '12')]);
    const r = await barrier.waitFor('dev', { 'apps/v1/Deployment/shop/web': '12' }, 5000);
    expect(r).toEqual({ ok: true, waitedFor: ['apps/v1/Deployment/shop/web'], notCached: [] });
  });

  it('waits through older writes and resolves on the write at or beyond the version', async () => {
    const { store, barrier } = await setup();
    await store.apply([write('ADDED', 'web', '10')]);
    let settled = false;
    const waiting = barrier.waitFor('dev', { 'apps/v1/Deployment/shop/web': '15' }, 5000).then((r) => {
      settled = true;
      return r;
    });
    await store.apply([write('MODIFIED', 'web', '14')]);
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(false);
    await store.apply([write('MODIFIED', 'web', '16')]);
    expect((await waiting).ok).toBe(true);
  });

  it('waits for deleted objects to leave the cache', async () => {
    const { store, barrier } = await setup();
    await store.apply([write('ADDED', 'old', '20')]);
    const waiting = barrier.waitFor('dev', { 'apps/v1/Deployment/shop/old': '' }, 5000);
    await store.apply([write('DELETED', 'old', '21')]);
    expect((await waiting).ok).toBe(true);
    expect(
      await store.get({ account: 'dev', group: 'apps', kind: 'Deployment', namespace: 'shop', name: 'old' }),
    ).toBeUndefined();
  });

  it('gives up after its bound and names what the cache has not caught up with', async () => {
    const { store, barrier } = await setup();
    await store.apply([write('ADDED', 'web', '10'), write('ADDED', 'api', '11')]);
    const r = await barrier.waitFor(
      'dev',
      { 'apps/v1/Deployment/shop/web': '10', 'apps/v1/Deployment/shop/api': '99' },
      50,
    );
    expect(r).toEqual({ ok: false, pending: ['apps/v1/Deployment/shop/api'], notCached: [] });
  });

  it('serves concurrent waiters on one object and leaves nothing indexed behind', async () => {
    const { store, barrier } = await setup();
    const a = barrier.waitFor('dev', { 'apps/v1/Deployment/shop/web': '30' }, 5000);
    const b = barrier.waitFor('dev', { 'apps/v1/Deployment/shop/web': '31', 'apps/v1/Deployment/shop/api': '' }, 5000);
    expect(barrier.waiting).toBe(2);
    await store.apply([write('ADDED', 'web', '31')]);
    expect([(await a).ok, (await b).ok]).toEqual([true, true]);
    expect(barrier.waiting).toBe(0);
  });

  it('does not wait for kinds the account does not cache', async () => {
    const { barrier } = await setup(['ConfigMap']);
    const r = await barrier.waitFor('dev', { 'apps/v1/Deployment/shop/web': '5' }, 5000);
    expect(r).toEqual({ ok: true, waitedFor: [], notCached: ['apps/v1/Deployment/shop/web'] });
  });
});
