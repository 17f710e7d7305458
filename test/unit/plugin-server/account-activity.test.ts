/**
 * Per-account lag and sync progress (account-activity.ts) as /armory/accounts shows them, driven over a real gRPC
 * stream: a sync counts the objects between SyncStart and SyncEnd, ends with the last scope, and a sync left open by
 * a stream that lost the account is not shown for the stream that took it over.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import { account, change, configMap, eventually, getJson, startServer, TestAgent } from './helpers.js';

interface View {
  changeLagMs: number | null;
  lastChangeAt: number | null;
  sync: { scopesListing: number; scopesListed: number; objects: number; startedAt: number } | null;
}

const scope = (kind: string, namespace = '') => ({
  account: 'dev',
  kind: { group: '', version: 'v1', kind, resource: `${kind.toLowerCase()}s`, namespaced: true },
  namespace,
});

describe('account activity in /armory/accounts', () => {
  let server: PluginServer;
  let base: string;
  let address: string;
  const agents: TestAgent[] = [];
  const agent = () => {
    const a = new TestAgent(address);
    agents.push(a);
    return a;
  };
  const view = async () => (await getJson(`${base}/armory/accounts/dev`)).body as View;
  const metric = async () =>
    /^scale_agent_plugin_server_accounts_syncing (\d+)$/m.exec(await (await fetch(`${base}/metrics`)).text())?.[1];

  beforeEach(async () => {
    ({ server, base, address } = await startServer('accounts: {gracePeriodSeconds: 30}'));
  });
  afterEach(async () => {
    for (const a of agents.splice(0)) a.close();
    await server.stop();
  });

  it('tracks a sync over two scopes, then the lag of a batch', async () => {
    const a = agent();
    await a.hello([account('dev')]);
    expect(await view()).toMatchObject({ changeLagMs: null, lastChangeAt: null, sync: null });
    const before = Date.now();
    await a.data({ syncStart: { ...scope('ConfigMap'), seq: 0 } });
    await a.data({ syncStart: { ...scope('Secret'), seq: 0 } });
    await a.batch([change('dev', 'ADDED', configMap('a', '10')), change('dev', 'ADDED', configMap('b', '11'))]);
    await a.data({ syncEnd: { ...scope('ConfigMap'), seq: 0, resourceVersion: '11' } });
    const mid = await view();
    expect(mid.sync).toEqual({ scopesListing: 1, scopesListed: 1, objects: 2, startedAt: expect.any(Number) });
    expect(mid.sync!.startedAt).toBeGreaterThanOrEqual(before);
    expect(await metric()).toBe('1');

    await a.data({ syncEnd: { ...scope('Secret'), seq: 0, resourceVersion: '11' } });
    expect((await view()).sync).toBeNull();
    expect(await metric()).toBe('0');

    // A batch the agent read 250 ms ago: the lag counts from then.
    const seq = ++a.seq;
    a.send({
      changeBatch: { seq, changes: [change('dev', 'ADDED', configMap('c', '12'))], observedAtMs: Date.now() - 250 },
    });
    await a.next((m) => (m.ack?.seq ?? 0) >= seq);
    const after = await view();
    expect(after.changeLagMs).toBeGreaterThanOrEqual(250);
    expect(after.changeLagMs).toBeLessThan(5000);
    expect(after.lastChangeAt).toBeGreaterThanOrEqual(before);

    // Once no stream here holds the account, what this replica saw is stale: not shown.
    a.close();
    await eventually(
      () => getJson(`${base}/armory/accounts/dev`),
      (r) => (r.body as { state: string }).state === 'ORPHANED',
    );
    expect(await view()).toMatchObject({ changeLagMs: null, lastChangeAt: null, sync: null });
  });

  it('does not show a sync left open by a stream that lost the account', async () => {
    const a = agent();
    await a.hello([account('dev')]);
    await a.data({ syncStart: { ...scope('ConfigMap'), seq: 0 } });
    expect((await view()).sync).toMatchObject({ scopesListing: 1 });
    a.close();
    // The same cluster's agent reconnecting takes the account over; its own sync starts from nothing.
    const b = agent();
    expect((await b.hello([account('dev')])).acceptedAccounts).toEqual(['dev']);
    expect((await view()).sync).toBeNull();
    await b.data({ syncStart: { ...scope('Secret'), seq: 0 } });
    expect((await view()).sync).toMatchObject({ scopesListing: 1, scopesListed: 0, objects: 0 });
  });
});
