/**
 * Plugin-server replicas sharing one MariaDB, and agent replicas sharing one account, end to end with real
 * processes: a replica without agents serves a peer's accounts from the shared cache, restarting it never removes
 * accounts a peer's agent holds, and of two agents of one group only one writes an account while the other stands by
 * and takes over when the first is killed. The cache checker compares the cache with the API server after each.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch, type CacheCheckOptions } from '../infra/cache-checker.js';
import { createNamespace, createTestDatabase, kubectl, testEnv, waitFor } from '../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../infra/processes.js';

interface AccountView {
  name: string;
  state: string;
  agentId: string;
  heldBy: 'local' | { replica: string; url: string } | null;
}

function configMaps(ns: string, prefix: string, from: number, to: number): string {
  const items = [];
  for (let i = from; i < to; i++) {
    items.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${prefix}-${i}`, namespace: ns }, data: {} });
  }
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

const checked = (httpBase: string, account: string, ns: string): CacheCheckOptions => ({
  httpBase,
  account,
  kubeconfig: testEnv().kubeconfig,
  namespaces: [ns],
  kinds: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaced: true }],
});

async function account(server: PluginServerProcess, name: string): Promise<AccountView | undefined> {
  const r = await server.get<AccountView>(`/armory/accounts/${name}`);
  return r.status === 200 ? r.body : undefined;
}

describe('plugin-server replicas on one MySQL store', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it("a replica without agents serves a peer's account, and restarting it never removes the live account", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-agent-e2e-replicas-'));
    const ns = await createNamespace('replicas');
    const db = await createTestDatabase('e2e_replicas');
    cleanups.push(() => db.drop());
    // A short grace period: before leases, a restarted replica loaded the account ORPHANED and removed it, with
    // its cache in the shared database, this long after starting, although the peer's agent held it.
    const settings = { accounts: { gracePeriodSeconds: 2, leaseSeconds: 3 } };
    const storage = { type: 'mysql' as const, url: db.url };
    const a = await PluginServerProcess.start({ dir, name: 'replica-a', storage, extra: settings });
    cleanups.push(() => a.stop());
    const b = await PluginServerProcess.start({ dir, name: 'replica-b', storage, extra: settings });
    cleanups.push(() => b.stop());
    const spec = { name: 'shared', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] };
    const agent = await AgentProcess.start({ dir, serverAddress: a.grpcAddress, accounts: [spec] });
    cleanups.push(() => agent.stop());
    await kubectl(['apply', '-f', '-'], { input: configMaps(ns, 'cm', 0, 40) });
    await waitForCacheToMatch(checked(a.httpBase, 'shared', ns));

    // B answers for the account A's agent holds: listed, ACTIVE, held by A, and its cache reads are A's writes.
    const onB = await waitFor('replica B to know the account', async () => {
      const v = await account(b, 'shared');
      return v?.state === 'ACTIVE' ? v : undefined;
    });
    expect(onB.heldBy).toMatchObject({ replica: expect.stringMatching(/./) as unknown });
    expect((await account(a, 'shared'))?.heldBy).toBe('local');
    const creds = await b.get<{ name: string }[]>('/credentials');
    expect(creds.body.map((c) => c.name)).toContain('shared');
    await waitForCacheToMatch(checked(b.httpBase, 'shared', ns));

    await b.restart();
    await kubectl(['apply', '-f', '-'], { input: configMaps(ns, 'later', 0, 10) });
    // Past the grace period plus a lease and a few sweeps of the restarted replica.
    await sleep(7_000);
    for (const server of [a, b]) {
      expect((await account(server, 'shared'))?.state).toBe('ACTIVE');
      await waitForCacheToMatch(checked(server.httpBase, 'shared', ns));
    }
  });

  it('the account of a killed replica becomes ORPHANED on its peer once the lease lapses, then is removed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-agent-e2e-lease-'));
    const ns = await createNamespace('lease');
    const db = await createTestDatabase('e2e_lease');
    cleanups.push(() => db.drop());
    const settings = { accounts: { gracePeriodSeconds: 3, leaseSeconds: 3 } };
    const storage = { type: 'mysql' as const, url: db.url };
    const a = await PluginServerProcess.start({ dir, name: 'replica-a', storage, extra: settings });
    cleanups.push(() => a.stop());
    const b = await PluginServerProcess.start({ dir, name: 'replica-b', storage, extra: settings });
    cleanups.push(() => b.stop());
    const spec = { name: 'leased', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] };
    const agent = await AgentProcess.start({ dir, serverAddress: a.grpcAddress, accounts: [spec] });
    cleanups.push(() => agent.stop());
    await kubectl(['apply', '-f', '-'], { input: configMaps(ns, 'cm', 0, 5) });
    await waitForCacheToMatch(checked(a.httpBase, 'leased', ns));
    await waitFor('replica B to see the account held', async () =>
      (await account(b, 'leased'))?.state === 'ACTIVE' ? true : undefined,
    );
    // SIGKILL: no release; only the lease's expiry tells B. The agent keeps dialling the dead replica (no load
    // balancer here), so nobody holds the account any more.
    await a.kill();
    const orphaned = await waitFor('replica B to see the account ORPHANED', async () => {
      const v = await account(b, 'leased');
      return v?.state === 'ORPHANED' ? v : undefined;
    });
    expect(orphaned.heldBy).toBeNull();
    await waitFor('replica B to remove the account after the grace period', async () =>
      (await b.get('/armory/accounts/leased')).status === 404 ? true : undefined,
    );
    expect((await b.get('/credentials')).body).toEqual([]);
  });
});

describe('two agents of one group for one account', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('one writes, the other stands by and takes over when the first is killed; the cache equals the API server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-agent-e2e-agent-ha-'));
    const ns = await createNamespace('agent-ha');
    const server = await PluginServerProcess.start({ dir });
    cleanups.push(() => server.stop());
    const spec = { name: 'ha', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] };
    const first = await AgentProcess.start({
      dir,
      agentId: 'ha-1',
      serverAddress: server.grpcAddress,
      accounts: [spec],
    });
    cleanups.push(() => first.stop());
    await kubectl(['apply', '-f', '-'], { input: configMaps(ns, 'a', 0, 30) });
    await waitForCacheToMatch(checked(server.httpBase, 'ha', ns));
    const second = await AgentProcess.start({
      dir,
      agentId: 'ha-2',
      serverAddress: server.grpcAddress,
      accounts: [spec],
    });
    cleanups.push(() => second.stop());

    // The newer stream did not take the account: ha-1 still writes it and ha-2 is told it stands by.
    const agents = (
      await server.get<{ agentId: string; rejectedAccounts?: { name: string; reason: string }[] }[]>('/armory/agents')
    ).body;
    const standby = agents.find((x) => x.agentId === 'ha-2');
    expect(standby?.rejectedAccounts).toEqual([{ name: 'ha', reason: expect.stringMatching(/^standby: .*ha-1/) }]);
    expect((await account(server, 'ha'))?.agentId).toBe('ha-1');

    const churn = kubectl(['apply', '-f', '-'], { input: configMaps(ns, 'b', 0, 60) });
    await first.kill();
    await churn;
    await kubectl(['delete', 'configmap', 'a-0', 'a-1', '-n', ns]);
    const takenOver = await waitFor('ha-2 to take the account over', async () => {
      const v = await account(server, 'ha');
      return v?.agentId === 'ha-2' && v.state === 'ACTIVE' ? v : undefined;
    });
    expect(takenOver.heldBy).toBe('local');
    await waitForCacheToMatch(checked(server.httpBase, 'ha', ns));

    // ha-1 back: now it is the standby, and the account stays with ha-2.
    await first.restart();
    const back = (
      await server.get<{ agentId: string; rejectedAccounts?: { name: string; reason: string }[] }[]>('/armory/agents')
    ).body.find((x) => x.agentId === 'ha-1');
    expect(back?.rejectedAccounts).toEqual([{ name: 'ha', reason: expect.stringMatching(/^standby: .*ha-2/) }]);
    await kubectl(['apply', '-f', '-'], { input: configMaps(ns, 'c', 0, 5) });
    await waitForCacheToMatch(checked(server.httpBase, 'ha', ns));
    expect((await account(server, 'ha'))?.agentId).toBe('ha-2');
  });
});
