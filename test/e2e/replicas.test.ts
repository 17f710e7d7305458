/**
 * Plugin-server replicas sharing one SQL store (MariaDB, and a PostgreSQL server of the file's own for the same
 * cases), and agent replicas sharing one account, end to end with real processes: a replica without agents serves a
 * peer's accounts from the shared cache, restarting it never removes accounts a peer's agent holds, and of two agents
 * of one group only one writes an account while the other stands by and takes over when the first is killed. The
 * cache checker compares the cache with the API server after each.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import { configMapList } from '../infra/manifests.js';
import type { PluginServerProcess } from '../infra/processes.js';
import { startStack, type Stack } from '../infra/stack.js';

interface AccountView {
  name: string;
  state: string;
  agentId: string;
  heldBy: 'local' | { replica: string; url: string } | null;
}

async function account(server: PluginServerProcess, name: string): Promise<AccountView | undefined> {
  const r = await server.get<AccountView>(`/armory/accounts/${name}`);
  return r.status === 200 ? r.body : undefined;
}

describe.each(['mysql', 'postgres'] as const)('plugin-server replicas on one %s store', (store) => {
  const stacks: Stack[] = [];
  afterAll(async () => {
    for (const s of stacks) await s.stop();
  });

  it("a replica without agents serves a peer's account, and restarting it never removes the live account", async () => {
    const stack = await startStack({
      name: 'replicas',
      store,
      replicas: 2,
      // A short grace period: before leases, a restarted replica loaded the account ORPHANED and removed it, with
      // its cache in the shared database, this long after starting, although the peer's agent held it.
      server: { extra: { accounts: { gracePeriodSeconds: 2, leaseSeconds: 3 } } },
      agent: { accounts: [{ name: 'shared', kinds: ['ConfigMap'] }] },
    });
    stacks.push(stack);
    const [a, b] = stack.replicas as [PluginServerProcess, PluginServerProcess];
    const { ns } = stack;
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'cm', 0, 40) });
    await waitForCacheToMatch(stack.cacheCheck('shared'));

    // B answers for the account A's agent holds: listed, ACTIVE, held by A, and its cache reads are A's writes.
    const onB = await waitFor('replica B to know the account', async () => {
      const v = await account(b, 'shared');
      return v?.state === 'ACTIVE' ? v : undefined;
    });
    expect(onB.heldBy).toMatchObject({ replica: expect.stringMatching(/./) as unknown });
    expect((await account(a, 'shared'))?.heldBy).toBe('local');
    const creds = await b.get<{ name: string }[]>('/credentials');
    expect(creds.body.map((c) => c.name)).toContain('shared');
    await waitForCacheToMatch(stack.cacheCheck('shared', { httpBase: b.httpBase }));

    await b.restart();
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'later', 0, 10) });
    // Past the grace period plus a lease and a few sweeps of the restarted replica.
    await sleep(7_000);
    for (const server of [a, b]) {
      expect((await account(server, 'shared'))?.state).toBe('ACTIVE');
      await waitForCacheToMatch(stack.cacheCheck('shared', { httpBase: server.httpBase }));
    }
  });

  it('the account of a killed replica becomes ORPHANED on its peer once the lease lapses, then is removed', async () => {
    const stack = await startStack({
      name: 'lease',
      store,
      replicas: 2,
      server: { extra: { accounts: { gracePeriodSeconds: 3, leaseSeconds: 3 } } },
      agent: { accounts: [{ name: 'leased', kinds: ['ConfigMap'] }] },
    });
    stacks.push(stack);
    const [a, b] = stack.replicas as [PluginServerProcess, PluginServerProcess];
    await kubectl(['apply', '-f', '-'], { input: configMapList(stack.ns, 'cm', 0, 5) });
    await waitForCacheToMatch(stack.cacheCheck('leased'));
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
  const stacks: Stack[] = [];
  afterAll(async () => {
    for (const s of stacks) await s.stop();
  });

  it('one writes, the other stands by and takes over when the first is killed; the cache equals the API server', async () => {
    const accounts = [{ name: 'ha', kinds: ['ConfigMap'] }];
    const stack = await startStack({ name: 'agent-ha', store: 'memory', agent: { agentId: 'ha-1', accounts } });
    stacks.push(stack);
    const { server, ns, agent: first } = stack;
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'a', 0, 30) });
    await waitForCacheToMatch(stack.cacheCheck('ha'));
    await stack.addAgent({ agentId: 'ha-2', accounts });

    // The newer stream did not take the account: ha-1 still writes it and ha-2 is told it stands by.
    const agents = (
      await server.get<{ agentId: string; rejectedAccounts?: { name: string; reason: string }[] }[]>('/armory/agents')
    ).body;
    const standby = agents.find((x) => x.agentId === 'ha-2');
    expect(standby?.rejectedAccounts).toEqual([{ name: 'ha', reason: expect.stringMatching(/^standby: .*ha-1/) }]);
    expect((await account(server, 'ha'))?.agentId).toBe('ha-1');

    const churn = kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'b', 0, 60) });
    await first.kill();
    await churn;
    await kubectl(['delete', 'configmap', 'a-0', 'a-1', '-n', ns]);
    const takenOver = await waitFor('ha-2 to take the account over', async () => {
      const v = await account(server, 'ha');
      return v?.agentId === 'ha-2' && v.state === 'ACTIVE' ? v : undefined;
    });
    expect(takenOver.heldBy).toBe('local');
    await waitForCacheToMatch(stack.cacheCheck('ha'));

    // ha-1 back: now it is the standby, and the account stays with ha-2.
    await first.restart();
    const back = (
      await server.get<{ agentId: string; rejectedAccounts?: { name: string; reason: string }[] }[]>('/armory/agents')
    ).body.find((x) => x.agentId === 'ha-1');
    expect(back?.rejectedAccounts).toEqual([{ name: 'ha', reason: expect.stringMatching(/^standby: .*ha-2/) }]);
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'c', 0, 5) });
    await waitForCacheToMatch(stack.cacheCheck('ha'));
    expect((await account(server, 'ha'))?.agentId).toBe('ha-2');
  });
});
