/**
 * The store contracts: every implementation (memory here, MySQL against a real MariaDB in
 * test/integration/plugin-server/mysql-store.test.ts, PostgreSQL against a real one in postgres-store.test.ts there)
 * must pass exactly these tests.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  AccountRecord,
  StoreBackend,
  ScopeKey,
  StoreChange,
  StoreOp,
} from '../../../src/plugin-server/cache/store.js';
import {
  APPLICATION_INDEX,
  applicationClusters,
  listApplication,
  listOwned,
} from '../../../src/plugin-server/views/app-index.js';
import { normalizeAccountRecord } from '../../../src/plugin-server/cache/store.js';
import { LeaseLost, type LeaseHolder, type WriteFence } from '../../../src/plugin-server/ownership.js';

export interface StoreFactory {
  create(): Promise<StoreBackend>;
  destroy(store: StoreBackend): Promise<void>;
}

function change(
  type: StoreChange['type'],
  name: string,
  rv: string,
  extra: Partial<StoreChange> & { data?: Record<string, unknown> } = {},
): StoreOp {
  const { data, ...rest } = extra;
  const c: StoreChange = {
    type,
    account: 'dev',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace: 'ns1',
    name,
    uid: `uid-${name}`,
    resourceVersion: rv,
    json: '',
    ...rest,
  };
  if (!c.json && type !== 'DELETED') {
    c.json = JSON.stringify({
      apiVersion: c.apiVersion,
      kind: c.kind,
      metadata: { name, namespace: c.namespace || undefined, resourceVersion: rv },
      data: data ?? { v: rv },
    });
  }
  return { op: 'change', change: c };
}

const cmScope: ScopeKey = { account: 'dev', group: '', kind: 'ConfigMap', namespace: '' };
const syncStart = (scope: ScopeKey = cmScope): StoreOp => ({ op: 'syncStart', scope, version: 'v1' });
const syncEnd = (rv: string, scope: ScopeKey = cmScope): StoreOp => ({
  op: 'syncEnd',
  scope,
  version: 'v1',
  resourceVersion: rv,
});

export function cacheStoreContract(name: string, factory: StoreFactory): void {
  describe(`store contract: ${name}`, () => {
    let store: StoreBackend;
    beforeEach(async () => {
      store = await factory.create();
      await store.init();
    });
    afterEach(async () => {
      await factory.destroy(store);
    });

    const names = async (filter = {}) => (await store.list({ account: 'dev', ...filter })).map((o) => o.name);
    const rvOf = async (n: string) =>
      (await store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns1', name: n }))?.resourceVersion;

    it('init is idempotent', async () => {
      await store.init();
      await store.apply([change('ADDED', 'a', '5')]);
      await store.init();
      expect(await rvOf('a')).toBe('5');
    });

    it('tells onApplied subscribers of each write before apply() resolves, with the write readable', async () => {
      const seen: { ops: number; rv: string | undefined }[] = [];
      const reads: Promise<void>[] = [];
      const unsubscribe = store.onApplied((ops) => {
        reads.push(rvOf('a').then((rv) => void seen.push({ ops: ops.length, rv })));
      });
      await store.apply([syncStart(), change('ADDED', 'a', '5')]);
      // Subscribed to the write itself: the listener ran before apply() resolved.
      expect(reads).toHaveLength(1);
      unsubscribe();
      await store.apply([change('MODIFIED', 'a', '6')]);
      await Promise.all(reads);
      expect(seen).toEqual([{ ops: 2, rv: '5' }]);
    });

    it('stores, reads back and lists objects with their JSON intact', async () => {
      await store.apply([
        change('ADDED', 'a', '5', { data: { text: 'grüße ✓ "quoted"' } }),
        change('ADDED', 'web', '6', { apiVersion: 'apps/v1', kind: 'Deployment' }),
        change('ADDED', 'ns1', '7', { kind: 'Namespace', namespace: '' }),
      ]);
      const a = await store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns1', name: 'a' });
      expect(a).toMatchObject({ account: 'dev', group: '', apiVersion: 'v1', kind: 'ConfigMap', uid: 'uid-a' });
      expect(JSON.parse(a!.json).data.text).toBe('grüße ✓ "quoted"');
      // Kind matching ignores case (Clouddriver says "deployment"), and an undefined group matches any group.
      const web = await store.get({ account: 'dev', kind: 'deployment', namespace: 'ns1', name: 'web' });
      expect(web).toMatchObject({ group: 'apps', kind: 'Deployment', apiVersion: 'apps/v1' });
      expect(await store.get({ account: 'dev', group: '', kind: 'deployment', namespace: 'ns1', name: 'web' })).toBe(
        undefined,
      );
      expect(
        await store.get({ account: 'dev', group: '', kind: 'namespace', namespace: '', name: 'ns1' }),
      ).toMatchObject({ namespace: '' });
      expect(await store.get({ account: 'other', kind: 'ConfigMap', namespace: 'ns1', name: 'a' })).toBe(undefined);
      expect(await names()).toEqual(['a', 'ns1', 'web']);
      expect(await names({ kind: 'configmap' })).toEqual(['a']);
      expect(await names({ group: 'apps' })).toEqual(['web']);
      expect(await names({ namespace: '' })).toEqual(['ns1']);
    });

    it('never moves an object backwards: older and equal resourceVersions are ignored, compared as integers', async () => {
      await store.apply([change('ADDED', 'a', '10')]);
      await store.apply([change('MODIFIED', 'a', '9')]);
      expect(await rvOf('a')).toBe('10');
      await store.apply([change('MODIFIED', 'a', '10', { data: { changed: 'no' } })]);
      const same = await store.get({ account: 'dev', kind: 'ConfigMap', namespace: 'ns1', name: 'a' });
      expect(JSON.parse(same!.json).data).toEqual({ v: '10' });
      await store.apply([change('MODIFIED', 'a', '100')]);
      expect(await rvOf('a')).toBe('100');
      // Several changes of one object in one batch apply in order.
      await store.apply([
        change('MODIFIED', 'a', '101'),
        change('MODIFIED', 'a', '99'),
        change('MODIFIED', 'a', '102'),
      ]);
      expect(await rvOf('a')).toBe('102');
    });

    it('keeps deletes as tombstones so a replayed older event cannot resurrect the object', async () => {
      await store.apply([change('ADDED', 'a', '10'), change('DELETED', 'a', '12')]);
      expect(await rvOf('a')).toBe(undefined);
      expect(await names()).toEqual([]);
      await store.apply([change('ADDED', 'a', '10'), change('MODIFIED', 'a', '11')]);
      expect(await rvOf('a')).toBe(undefined);
      // A delete of an object never seen still guards against its older events arriving later.
      await store.apply([change('DELETED', 'b', '20'), change('ADDED', 'b', '19')]);
      expect(await rvOf('b')).toBe(undefined);
      // Re-created under the same name: newer, so it is back.
      await store.apply([change('ADDED', 'a', '13')]);
      expect(await rvOf('a')).toBe('13');
    });

    it('drops tombstones once a bookmark or SyncEnd of their scope passes them, and keeps those above it', async () => {
      const bookmark = (rv: string, scope: ScopeKey = cmScope): StoreOp => ({
        op: 'bookmark',
        scope,
        version: 'v1',
        resourceVersion: rv,
      });
      await store.apply([syncStart(), change('ADDED', 'a', '10'), change('ADDED', 'b', '11'), syncEnd('11')]);
      await store.apply([change('DELETED', 'a', '12')]);
      // Until a bookmark, the tombstone still stops an older event.
      await store.apply([change('MODIFIED', 'a', '11')]);
      expect(await rvOf('a')).toBe(undefined);
      expect((await store.apply([bookmark('13')])).pruned).toBe(1);
      // Gone: an event older than it now applies. None can arrive: the agent resumes from 13 and replays only newer.
      await store.apply([change('MODIFIED', 'a', '11')]);
      expect(await rvOf('a')).toBe('11');

      // Deleted while the scope resyncs: the resume point (SyncEnd at 20) is below the tombstone (25), so it stays.
      await store.apply([
        syncStart(),
        change('ADDED', 'a', '11'),
        change('ADDED', 'b', '11'),
        change('DELETED', 'c', '25'),
      ]);
      expect((await store.apply([syncEnd('20')])).pruned).toBe(0);
      await store.apply([change('ADDED', 'c', '24')]);
      expect(await rvOf('c')).toBe(undefined);
      // Another scope's bookmark (another kind, another account) leaves it alone.
      const deploy: ScopeKey = { account: 'dev', group: 'apps', kind: 'Deployment', namespace: '' };
      await store.apply([{ op: 'syncStart', scope: deploy, version: 'v1' }, syncEnd('30', deploy)]);
      expect((await store.apply([bookmark('40', deploy)])).pruned).toBe(0);
      expect((await store.apply([bookmark('30', { ...cmScope, account: 'prod' })])).pruned).toBe(0);
      await store.apply([change('ADDED', 'c', '24')]);
      expect(await rvOf('c')).toBe(undefined);
      // Its own scope's bookmark at 25 passes it.
      expect((await store.apply([bookmark('25')])).pruned).toBe(1);
      await store.apply([change('ADDED', 'c', '24')]);
      expect(await rvOf('c')).toBe('24');
      // Live objects are never touched by the pruning.
      expect(await names()).toEqual(['a', 'b', 'c']);
    });

    it('falls back to last-writer-wins for resourceVersions that are not integers', async () => {
      await store.apply([change('ADDED', 'a', 'abc')]);
      await store.apply([change('MODIFIED', 'a', 'abd')]);
      expect(await rvOf('a')).toBe('abd');
      await store.apply([change('MODIFIED', 'a', '7')]);
      expect(await rvOf('a')).toBe('7');
    });

    it('resync sweeps what the new list did not contain, including tombstones', async () => {
      await store.apply([syncStart(), change('ADDED', 'a', '1'), change('ADDED', 'b', '2'), syncEnd('2')]);
      await store.apply([change('ADDED', 'c', '3'), change('DELETED', 'd', '4')]);
      expect(await names()).toEqual(['a', 'b', 'c']);
      // The relist sees a (unchanged), c (unchanged) and e; b was deleted while nobody watched.
      await store.apply([syncStart(), change('ADDED', 'a', '1'), change('ADDED', 'c', '3')]);
      await store.apply([change('ADDED', 'e', '6'), syncEnd('6')]);
      expect(await names()).toEqual(['a', 'c', 'e']);
      // The tombstone of d was swept too: an event for d now applies.
      await store.apply([change('ADDED', 'd', '3')]);
      expect(await rvOf('d')).toBe('3');
    });

    it('a sweep stays within its scope: namespace, kind and account', async () => {
      const ns1: ScopeKey = { ...cmScope, namespace: 'ns1' };
      const ns2: ScopeKey = { ...cmScope, namespace: 'ns2' };
      await store.apply([
        syncStart(ns1),
        syncStart(ns2),
        change('ADDED', 'a', '1'),
        change('ADDED', 'b', '2', { namespace: 'ns2' }),
        change('ADDED', 's', '3', { kind: 'Secret' }),
        change('ADDED', 'x', '4', { account: 'prod' }),
        syncEnd('4', ns1),
        syncEnd('4', ns2),
      ]);
      await store.apply([syncStart(ns1), syncEnd('5', ns1)]);
      expect(await names()).toEqual(['b', 's']);
      expect((await store.list({ account: 'prod' })).map((o) => o.name)).toEqual(['x']);
    });

    it('gives resume points only for completed syncs, advanced by bookmarks and changes', async () => {
      const deploy: ScopeKey = { account: 'dev', group: 'apps', kind: 'Deployment', namespace: '' };
      expect(await store.resumePoints('dev')).toEqual([]);
      await store.apply([syncStart(), change('ADDED', 'a', '10')]);
      expect(await store.resumePoints('dev')).toEqual([]);
      await store.apply([syncEnd('15'), { op: 'syncStart', scope: deploy, version: 'v1' }]);
      expect(await store.resumePoints('dev')).toEqual([{ ...cmScope, version: 'v1', resourceVersion: '15' }]);
      await store.apply([{ op: 'bookmark', scope: cmScope, version: 'v1', resourceVersion: '20' }]);
      await store.apply([change('MODIFIED', 'a', '25')]);
      // An out-of-date bookmark never moves the resume point back.
      await store.apply([{ op: 'bookmark', scope: cmScope, version: 'v1', resourceVersion: '21' }]);
      await store.apply([{ op: 'syncEnd', scope: deploy, version: 'v1', resourceVersion: '9' }]);
      expect(await store.resumePoints('dev')).toEqual([
        { ...cmScope, version: 'v1', resourceVersion: '25' },
        { ...deploy, version: 'v1', resourceVersion: '9' },
      ]);
      // A new sync invalidates the resume point until it ends.
      await store.apply([syncStart()]);
      expect((await store.resumePoints('dev')).map((r) => r.kind)).toEqual(['Deployment']);
      expect(await store.resumePoints('prod')).toEqual([]);
    });

    it('counts live objects per account and kind', async () => {
      await store.apply([
        change('ADDED', 'a', '1'),
        change('ADDED', 'b', '2'),
        change('DELETED', 'b', '3'),
        change('ADDED', 'web', '4', { apiVersion: 'apps/v1', kind: 'Deployment' }),
        change('ADDED', 'x', '5', { account: 'prod' }),
      ]);
      const counts = (await store.counts()).sort((x, y) =>
        `${x.account}${x.kind}`.localeCompare(`${y.account}${y.kind}`),
      );
      expect(counts).toEqual([
        { account: 'dev', group: '', kind: 'ConfigMap', count: 1 },
        { account: 'dev', group: 'apps', kind: 'Deployment', count: 1 },
        { account: 'prod', group: '', kind: 'ConfigMap', count: 1 },
      ]);
    });

    it('persists account records and drops an account with its cache and resume points', async () => {
      const rec: AccountRecord = {
        name: 'dev',
        agentId: 'agent-1',
        apiServerHost: '10.0.0.1:6443',
        caFingerprint: 'ab'.repeat(32),
        kubernetesVersion: 'v1.33.1',
        namespaces: ['ns1'],
        omitNamespaces: [],
        kinds: [],
        omitKinds: ['Secret'],
        permissions: { READ: ['dev-readers', 'ops'], WRITE: ['ops'] },
        onlySpinnakerManaged: true,
        cacheAllApplicationRelationships: false,
        registeredAt: 1_700_000_000_000,
      };
      // Permissions and the Clouddriver options round-trip, unrestricted and options flipped as well.
      const prod: AccountRecord = {
        ...rec,
        name: 'prod',
        permissions: { READ: [], WRITE: [] },
        onlySpinnakerManaged: false,
        cacheAllApplicationRelationships: true,
      };
      await store.saveAccount(rec);
      await store.saveAccount(prod);
      await store.saveAccount({ ...rec, agentId: 'agent-2' });
      expect(await store.listAccounts()).toEqual([{ ...rec, agentId: 'agent-2' }, prod]);
      await store.apply([
        syncStart(),
        change('ADDED', 'a', '1'),
        syncEnd('1'),
        change('ADDED', 'x', '2', { account: 'prod' }),
      ]);
      await store.dropAccount('dev');
      expect(await store.listAccounts()).toEqual([prod]);
      expect(await names()).toEqual([]);
      expect(await store.resumePoints('dev')).toEqual([]);
      expect((await store.list({ account: 'prod' })).length).toBe(1);
      // Coming back after a drop starts from a clean slate: a sync and events apply normally.
      await store.apply([syncStart(), change('ADDED', 'a', '1'), syncEnd('1')]);
      expect(await names()).toEqual(['a']);
    });

    it('a SyncStart or a dropped account inside a run of changes of one kind re-resolves where they go', async () => {
      // 'a' is written before its scope exists (generation 0); 'b' after SyncStart must carry the new generation,
      // so the sweep removes only 'a'.
      await store.apply([
        change('ADDED', 'a', '1'),
        syncStart(),
        change('ADDED', 'b', '2'),
        syncEnd('2'),
        change('MODIFIED', 'b', '3'),
      ]);
      expect(await names()).toEqual(['b']);
      await store.dropAccount('dev');
      await store.apply([change('ADDED', 'c', '3'), change('ADDED', 'd', '4')]);
      expect(await names()).toEqual(['c', 'd']);
      await store.apply([syncStart(), change('ADDED', 'd', '5'), syncEnd('5')]);
      expect(await names()).toEqual(['d']);
      expect(await rvOf('d')).toBe('5');
    });

    it('applies a batch spanning many statements in order, per object and around scope ops', async () => {
      const filler = (from: number, n: number) =>
        Array.from({ length: n }, (_, i) => change('ADDED', `f-${from + i}`, String(from + i + 1)));
      // Versions that are not integers fall back to last-writer-wins, so only order decides what 'x' ends as.
      await store.apply([
        change('ADDED', 'x', 'rv-a'),
        ...filler(0, 1200),
        change('MODIFIED', 'x', 'rv-c'),
        ...filler(1200, 700),
        change('MODIFIED', 'x', 'rv-b', { data: { last: 'yes' } }),
        syncStart(),
        ...filler(1900, 600),
        change('DELETED', 'y', 'rv-z'),
        change('ADDED', 'y', 'rv-y'),
        syncEnd('2500'),
      ]);
      const x = await store.get({ account: 'dev', kind: 'ConfigMap', namespace: 'ns1', name: 'x' });
      expect(x).toBe(undefined);
      expect(await rvOf('y')).toBe('rv-y');
      const live = await names();
      expect(live).toHaveLength(601);
      expect(live).toContain('f-1900');
      expect(live).not.toContain('f-1899');
      // 'x' was swept: its last write came before the SyncStart. Written again, the last of a run wins.
      await store.apply([change('ADDED', 'x', 'rv-1'), ...filler(3000, 999), change('MODIFIED', 'x', 'rv-0')]);
      expect(await rvOf('x')).toBe('rv-0');
    });

    it('decides ownership atomically at its own clock: claim, standby, conflict, fence, renew, release, drop', async () => {
      const fp = 'ab'.repeat(32);
      const claim = (replica: string, sessionId: string, agentId: string, leaseMs = 60_000, host = 'h:6443') => ({
        account: 'dev',
        replica,
        replicaUrl: `http://${replica}:7002`,
        sessionId,
        agentId,
        cluster: { host, fingerprint: fp },
        leaseMs,
        failedHandoverMs: 60_000,
      });
      const record = (agentId: string, host = 'h:6443'): AccountRecord =>
        normalizeAccountRecord({ name: 'dev', agentId, apiServerHost: host, caFingerprint: fp });
      const leaseOf = async () => (await store.listLeases()).leases.find((l) => l.account === 'dev');
      await store.apply([syncStart(), change('ADDED', 'kept', '5'), syncEnd('5')]);

      // Two claims at once: one grant, one standby, whatever their order.
      const [first, second] = await Promise.all([
        store.claimAccount(claim('r1', 's1', 'agent-a'), record('agent-a')),
        store.claimAccount(claim('r2', 's2', 'agent-b'), record('agent-b')),
      ]);
      expect([first.granted, second.granted].sort()).toEqual([false, true]);
      const [won, lost] = first.granted ? [first, second] : [second, first];
      if (!won.granted || lost.granted) throw new Error('unreachable');
      expect(lost.code).toBe('standby');
      expect(won.lease.generation).toBe(1);
      const holder = { replica: won.lease.replica, sessionId: won.lease.sessionId, generation: 1 };
      expect((await store.listAccounts()).map((r) => r.agentId)).toEqual([won.lease.agentId]);
      // Another cluster under the name is refused, whoever holds it.
      const other = await store.claimAccount(
        claim('r3', 's3', won.lease.agentId, 60_000, 'x:6443'),
        record('x', 'x:6443'),
      );
      expect(other).toMatchObject({ granted: false, code: 'cluster_conflict', record: { apiServerHost: 'h:6443' } });
      // Live: not dropped; reports by the holder pass the fence, by anyone else not.
      expect(await store.dropAccountIfUnheld('dev', 0)).toBe(false);
      expect(await store.reportAccountState('dev', { ...holder, generation: 0 }, 'FAILED')).toBe(false);
      expect(await store.reportAccountState('dev', holder, 'FAILED')).toBe(true);
      expect(await leaseOf()).toMatchObject({ state: 'FAILED', generation: 1 });
      expect((await leaseOf())?.failedAt).toBeGreaterThan(0);
      // Writes fenced by the lease: the holder's pass; a token of another generation or stream writes nothing.
      const fence = (h: LeaseHolder): WriteFence => ({ ...h, generations: new Map([['dev', h.generation]]) });
      await store.apply([change('ADDED', 'by-holder', '6')], fence(holder));
      for (const h of [
        { ...holder, generation: 2 },
        { ...holder, sessionId: 'other' },
      ]) {
        await expect(store.apply([change('ADDED', 'by-other', '6')], fence(h))).rejects.toMatchObject({
          name: 'LeaseLost',
          accounts: ['dev'],
        });
      }
      expect(await names()).toEqual(['by-holder', 'kept']);
      // Renewal: only the replica's own live leases.
      expect(await store.renewLeases('elsewhere', 60_000)).toEqual([]);
      expect((await store.renewLeases(holder.replica, 60_000)).map((l) => l.sessionId)).toEqual([holder.sessionId]);
      // The same agent through a new stream takes it over (a reconnect): the old stream is fenced out.
      const again = await store.claimAccount(claim('r9', 's9', won.lease.agentId, 0), record(won.lease.agentId));
      expect(again).toMatchObject({ granted: true, lease: { generation: 2, state: 'ACTIVE', failedAt: 0 } });
      expect(await store.dropHeldAccount('dev', holder)).toBe(false);
      // Taken over: the former holder's write is refused as a whole (the account's scope state included), and so is
      // the new holder's once its lease (of 0 ms) has expired.
      const stale = [syncStart(), change('ADDED', 'stale', '7'), syncEnd('7')];
      await expect(store.apply(stale, fence(holder))).rejects.toBeInstanceOf(LeaseLost);
      await expect(store.apply(stale, fence({ replica: 'r9', sessionId: 's9', generation: 2 }))).rejects.toBeInstanceOf(
        LeaseLost,
      );
      expect(await names()).toEqual(['by-holder', 'kept']);
      expect((await store.resumePoints('dev')).map((p) => p.resourceVersion)).toEqual(['6']);
      await store.releaseAccounts(holder.replica, holder.sessionId, ['dev']);
      expect(await leaseOf()).toMatchObject({ sessionId: 's9', releasedAt: 0 });
      // A lease of 0 ms has expired at once: not renewed (its holder must claim again), and the account is droppable.
      expect(await store.renewLeases('r9', 60_000)).toEqual([]);
      // The grace period is the store's to judge, from when the lease ended at its clock (the caller passes no time
      // of its own): ended just now, it is not over, however long the caller thinks the account has been orphaned.
      expect(await store.dropAccountIfUnheld('dev', 60_000)).toBe(false);
      expect(await store.list({ account: 'dev' })).not.toEqual([]);
      expect(await store.dropAccountIfUnheld('dev', 0)).toBe(true);
      expect(await store.list({ account: 'dev' })).toEqual([]);
      expect(await leaseOf()).toBeUndefined();
      // Released by its holder: free at once for another agent, and the holder's drop is fenced by generation.
      const c = await store.claimAccount(claim('r1', 's4', 'agent-c'), record('agent-c'));
      if (!c.granted) throw new Error('claim refused');
      const h4 = { replica: 'r1', sessionId: 's4', generation: c.lease.generation };
      await store.releaseAccounts('r1', 's4', ['dev']);
      expect((await leaseOf())?.releasedAt).toBeGreaterThan(0);
      // Released just now: not live, but its grace period has not passed at the store's clock.
      expect(await store.dropAccountIfUnheld('dev', 60_000)).toBe(false);
      expect(await store.listAccounts()).toHaveLength(1);
      expect(await store.claimAccount(claim('r2', 's5', 'agent-d'), record('agent-d'))).toMatchObject({
        granted: true,
        lease: { generation: c.lease.generation + 1 },
      });
      expect(await store.dropHeldAccount('dev', h4)).toBe(false);
      expect(
        await store.dropHeldAccount('dev', { replica: 'r2', sessionId: 's5', generation: c.lease.generation + 1 }),
      ).toBe(true);
      expect(await store.listAccounts()).toEqual([]);
    });

    it('keeps replica views: replaced by their replica, listed while unexpired at its clock, pruned and dropped', async () => {
      const view = (replica: string, json: string) => ({ replica, replicaUrl: `http://${replica}:7002`, json });
      const listed = async () => {
        const { now, views } = await store.listReplicaViews();
        for (const v of views) expect(v.expiresAt).toBeGreaterThan(now);
        return views.map((v) => [v.replica, v.json]);
      };
      await store.publishReplicaView(view('r2', '{"agents":[]}'), 60_000, 0);
      await store.publishReplicaView(view('r1', '{"agents":[1]}'), 60_000, 0);
      // Listed in replica order, the JSON exactly as written; a later publish replaces the replica's view.
      await store.publishReplicaView(view('r1', '{"agents":[1,2]}'), 60_000, 0);
      expect(await listed()).toEqual([
        ['r1', '{"agents":[1,2]}'],
        ['r2', '{"agents":[]}'],
      ]);
      // Expired (its replica stopped publishing; here at once): no longer listed, and pruned by the next publish.
      await store.publishReplicaView(view('r2', '{"agents":[]}'), -1, 3_600_000);
      expect(await listed()).toEqual([['r1', '{"agents":[1,2]}']]);
      await store.publishReplicaView(view('r3', '{}'), 60_000, -1);
      expect(await listed()).toEqual([
        ['r1', '{"agents":[1,2]}'],
        ['r3', '{}'],
      ]);
      await store.dropReplicaView('r1');
      expect(await listed()).toEqual([['r3', '{}']]);
    });

    describe("named indexes (the views' application, cluster and owner indexes)", () => {
      beforeEach(() => store.addIndex(APPLICATION_INDEX));

      it('are registered once, before the first write, each name by one definition', async () => {
        store.addIndex(APPLICATION_INDEX);
        expect(store.indexes()).toEqual([APPLICATION_INDEX]);
        expect(() => store.addIndex({ ...APPLICATION_INDEX, names: ['owner'] })).toThrow(/owner is already registered/);
        await expect(store.byIndex('no-such-index', ['x'])).rejects.toThrow(/no-such-index is not registered/);
        await store.apply([change('ADDED', 'a', '1')]);
        expect(() => store.addIndex({ ...APPLICATION_INDEX, names: [] })).toThrow(/after the first write/);
      });

      const rs = (name: string, rv: string, app: string, cluster: string, extra: Partial<StoreChange> = {}) =>
        change('ADDED', name, rv, {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          uid: `uid-${name}`,
          index: { application: app, cluster, owner: '' },
          ...extra,
        });
      const pod = (name: string, rv: string, ownerUid: string, extra: Partial<StoreChange> = {}) =>
        change('ADDED', name, rv, { kind: 'Pod', index: { owner: ownerUid }, ...extra });
      const appNames = async (app: string) =>
        (await listApplication(store, app)).map((o) => `${o.account}/${o.kind}/${o.name}:${o.index?.cluster ?? '?'}`);

      it('lists an application across accounts with its keys, follows updates, deletes and resyncs', async () => {
        await store.apply([
          rs('shop-v001', '10', 'shop', 'replicaSet shop'),
          rs('shop-v000', '11', 'shop', 'replicaSet shop', { account: 'prod' }),
          change('ADDED', 'shop', '12', { kind: 'Service', index: { application: 'shop', cluster: '', owner: '' } }),
          rs('cart-v000', '13', 'cart', 'replicaSet cart'),
          change('ADDED', 'plain', '14'),
        ]);
        // Ordered as list() orders: account, then group ('' before 'apps'), kind, namespace, name.
        expect(await appNames('shop')).toEqual([
          'dev/Service/shop:',
          'dev/ReplicaSet/shop-v001:replicaSet shop',
          'prod/ReplicaSet/shop-v000:replicaSet shop',
        ]);
        expect(await applicationClusters(store)).toEqual([
          { app: 'cart', account: 'dev', cluster: 'replicaSet cart' },
          { app: 'shop', account: 'dev', cluster: 'replicaSet shop' },
          { app: 'shop', account: 'prod', cluster: 'replicaSet shop' },
        ]);
        // An update moves the object to another application; an older replay does not move it back.
        await store.apply([rs('shop-v001', '20', 'cart', 'replicaSet cart')]);
        await store.apply([rs('shop-v001', '15', 'shop', 'replicaSet shop')]);
        expect(await appNames('cart')).toEqual([
          'dev/ReplicaSet/cart-v000:replicaSet cart',
          'dev/ReplicaSet/shop-v001:replicaSet cart',
        ]);
        expect(await appNames('shop')).toEqual(['dev/Service/shop:', 'prod/ReplicaSet/shop-v000:replicaSet shop']);
        // An update without keys leaves every index.
        await store.apply([change('MODIFIED', 'shop', '21', { kind: 'Service' })]);
        // A delete leaves the index and the cluster list.
        await store.apply([
          change('DELETED', 'shop-v000', '22', { account: 'prod', apiVersion: 'apps/v1', kind: 'ReplicaSet' }),
        ]);
        expect(await appNames('shop')).toEqual([]);
        expect((await applicationClusters(store)).map((c) => `${c.app}/${c.account}`)).toEqual(['cart/dev']);
        // A resync that no longer lists an object sweeps it out of the index.
        const rsScope: ScopeKey = { account: 'dev', group: 'apps', kind: 'ReplicaSet', namespace: '' };
        await store.apply([
          syncStart(rsScope),
          rs('cart-v000', '30', 'cart', 'replicaSet cart'),
          syncEnd('30', rsScope),
        ]);
        expect(await appNames('cart')).toEqual(['dev/ReplicaSet/cart-v000:replicaSet cart']);
        expect(await appNames('')).toEqual([]);
      });

      it('finds the objects a controller owns within one account, and forgets a dropped account', async () => {
        await store.apply([
          pod('web-1', '10', 'uid-rs-a'),
          pod('web-2', '11', 'uid-rs-a'),
          pod('web-3', '12', 'uid-rs-b'),
          pod('other', '13', 'uid-rs-a', { account: 'prod' }),
          rs('web-v000', '14', 'web', 'replicaSet web', { account: 'prod' }),
        ]);
        const owned = async (account: string, uids: string[]) =>
          (await listOwned(store, account, uids)).map((o) => `${o.name}:${o.index?.owner ?? '?'}`);
        expect(await owned('dev', ['uid-rs-a'])).toEqual(['web-1:uid-rs-a', 'web-2:uid-rs-a']);
        expect(await owned('dev', ['uid-rs-a', 'uid-rs-b', 'uid-rs-a'])).toEqual([
          'web-1:uid-rs-a',
          'web-2:uid-rs-a',
          'web-3:uid-rs-b',
        ]);
        expect(await owned('dev', [])).toEqual([]);
        expect(await owned('prod', ['uid-rs-a'])).toEqual(['other:uid-rs-a']);
        await store.apply([change('DELETED', 'web-2', '20', { kind: 'Pod' })]);
        expect(await owned('dev', ['uid-rs-a'])).toEqual(['web-1:uid-rs-a']);
        await store.dropAccount('prod');
        expect(await owned('prod', ['uid-rs-a'])).toEqual([]);
        expect(await listApplication(store, 'web')).toEqual([]);
        expect(await applicationClusters(store)).toEqual([]);
      });
    });

    it('search keys: one kind of every account, matched on the whole key, exact case, without tombstones', async () => {
      await store.apply([
        change('ADDED', 'web-v001', '1', { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'shop' }),
        change('ADDED', 'web-v000', '2', { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'shop' }),
        change('ADDED', 'Web-v002', '3', { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'shop' }),
        change('ADDED', 'web-v009', '4', {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          namespace: 'a',
          account: 'prod',
        }),
        change('ADDED', 'web-cfg', '5', { namespace: 'shop' }),
        change('ADDED', 'gone', '6', { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'shop' }),
        change('DELETED', 'gone', '7', { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespace: 'shop' }),
      ]);
      const rs = { group: 'apps', kind: 'ReplicaSet' };
      const keys = async (kind: { group: string | undefined; kind: string }, text: string) =>
        (await store.searchKeys(kind, 'replicaSet', text)).map((k) => `${k.account}/${k.namespace}/${k.name}`);
      expect(await keys(rs, 'web-v')).toEqual(['dev/shop/web-v000', 'dev/shop/web-v001', 'prod/a/web-v009']);
      // The whole key counts: kind name, account and namespace match too; case is exact.
      expect(await keys(rs, 'replicaSet:prod:')).toEqual(['prod/a/web-v009']);
      expect(await keys(rs, 'replicaset')).toEqual([]);
      expect(await keys(rs, 'dev:shop:W')).toEqual(['dev/shop/Web-v002']);
      expect(await keys({ group: undefined, kind: 'replicaset' }, '')).toHaveLength(4);
      expect((await store.searchKeys({ group: '', kind: 'ConfigMap' }, 'configMap', 'web'))[0]).toEqual({
        account: 'dev',
        group: '',
        kind: 'ConfigMap',
        namespace: 'shop',
        name: 'web-cfg',
      });
    });

    it('handles a large batch in one call', async () => {
      const ops: StoreOp[] = [syncStart()];
      for (let i = 0; i < 2000; i++) ops.push(change('ADDED', `cm-${String(i).padStart(4, '0')}`, String(i + 1)));
      ops.push(syncEnd('2000'));
      await store.apply(ops);
      expect((await store.list({ account: 'dev' })).length).toBe(2000);
      await store.ping();
    });
  });
}
