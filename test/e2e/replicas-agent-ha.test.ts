/**
 * Agent HA across plugin-server replicas: two agents of one group serve one account, each connected to a different
 * replica on one MariaDB. One holds the account and writes it; the other is told it stands by (never two writers);
 * when the holder is killed, the standby is promoted on its own replica, resumes, and the cache checker's diff is 0.
 * The account never goes missing while one of them is connected. Then, on the same stack, two load-sharing agents
 * split accounts across the two replicas (docs/architecture.md#load-sharing-agent-replicas).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { preferredAgent } from '../../src/plugin-server/ownership.js';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import { startReplicas, type Stack } from '../infra/stack.js';

interface AccountView {
  state: string;
  agentId: string;
  heldBy: unknown;
}

describe('two agents of one group on two replicas', () => {
  let stack: Stack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('one writes, the other stands by on its replica and takes over when the first is killed', async () => {
    const accounts = [{ name: 'ha', kinds: ['ConfigMap'] }];
    stack = await startReplicas(
      'replica-ha',
      { gracePeriodSeconds: 60, leaseSeconds: 3 },
      { agent: { agentId: 'ha-1', accounts } },
    );
    const [a, b] = stack.pair;
    const { ns, agent: first } = stack;
    await waitFor('B to see ha-1 holding the account', async () =>
      (await b.get<AccountView>('/armory/accounts/ha')).body.agentId === 'ha-1' ? true : undefined,
    );
    await stack.addAgent({ agentId: 'ha-2', serverAddress: b.grpcAddress, accounts });

    // Never two writers: ha-2 on B is standby for the account ha-1 holds through A.
    const onB = (
      await b.get<{ agentId: string; rejectedAccounts?: { name: string; reason: string }[] }[]>('/armory/agents')
    ).body.find((x) => x.agentId === 'ha-2');
    expect(onB?.rejectedAccounts).toEqual([{ name: 'ha', reason: expect.stringMatching(/^standby: .*ha-1/) }]);
    expect((await a.get<AccountView>('/armory/accounts/ha')).body).toMatchObject({ agentId: 'ha-1', heldBy: 'local' });

    const check = stack.cacheCheck('ha', { httpBase: b.httpBase });
    let stop = false;
    const missing: string[] = [];
    const watch = (async () => {
      while (!stop) {
        for (const r of [a, b]) if ((await r.get('/armory/accounts/ha')).status !== 200) missing.push(r.httpBase);
        await sleep(100);
      }
    })();
    const churn = kubectl(['create', 'configmap', 'during', '-n', ns, '--from-literal=k=v']);
    await first.kill();
    await churn;
    await kubectl(['create', 'configmap', 'after', '-n', ns, '--from-literal=k=v']);
    await waitFor('ha-2 to hold the account on B', async () => {
      const v = (await b.get<AccountView>('/armory/accounts/ha')).body;
      return v.agentId === 'ha-2' && v.heldBy === 'local' && v.state === 'ACTIVE' ? true : undefined;
    });
    await waitForCacheToMatch(check);
    stop = true;
    await watch;
    expect(missing).toEqual([]);
  });

  // The same stack (after the case above): two load-sharing agents, one per replica, split four accounts across the
  // replicas — the handoff asked through B reaches the holder's replica A through the store — and the survivor of a
  // kill holds all four, the cache checker's diff 0 throughout.
  it('load-sharing agents on two replicas split the accounts as placed and the survivor takes them all', async () => {
    if (!stack) throw new Error('the stack of the case above did not start');
    const [a, b] = stack.pair;
    const names = ['shared-0', 'shared-1', 'shared-2', 'shared-3'];
    const agents = ['ls-a', 'ls-b'];
    const accounts = names.map((name) => ({ name, kinds: ['ConfigMap'] }));
    const holders = async () => {
      const out: Record<string, string> = {};
      for (const name of names) {
        const v = (await b.get<AccountView>(`/armory/accounts/${name}`)).body;
        out[name] = v.state === 'ACTIVE' ? v.agentId : '';
      }
      return out;
    };
    const first = await stack.addAgent({
      agentId: agents[0],
      serverAddress: a.grpcAddress,
      accounts,
      extra: { loadSharing: true },
    });
    await waitFor('B to see ls-a holding every account', async () =>
      Object.values(await holders()).every((h) => h === agents[0]) ? true : undefined,
    );
    const placed = Object.fromEntries(names.map((n) => [n, preferredAgent(n, agents)]));
    expect(new Set(Object.values(placed))).toEqual(new Set(agents));
    await stack.addAgent({
      agentId: agents[1],
      serverAddress: b.grpcAddress,
      accounts,
      extra: { loadSharing: true },
      waitReady: false,
    });
    await waitFor('ls-b to connect to B', async () =>
      (await b.get<{ agentId: string }[]>('/armory/agents')).body.some((x) => x.agentId === agents[1])
        ? true
        : undefined,
    );
    const joined = Date.now();
    const churn = kubectl(['create', 'configmap', 'during-rebalance', '-n', stack.ns, '--from-literal=k=v']);
    await waitFor('the accounts to be held as placed', async () =>
      JSON.stringify(await holders()) === JSON.stringify(placed) ? true : undefined,
    );
    console.log(`load sharing across replicas: placed ${names.length} accounts in ${Date.now() - joined} ms`);
    await churn;
    for (const name of names) await waitForCacheToMatch(stack.cacheCheck(name, { httpBase: b.httpBase }));

    await first.kill();
    await kubectl(['create', 'configmap', 'after-kill', '-n', stack.ns, '--from-literal=k=v']);
    await waitFor('ls-b to hold every account', async () =>
      Object.values(await holders()).every((h) => h === agents[1]) ? true : undefined,
    );
    for (const name of names) await waitForCacheToMatch(stack.cacheCheck(name, { httpBase: b.httpBase }));
  });
});
