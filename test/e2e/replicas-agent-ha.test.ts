/**
 * Agent HA across plugin-server replicas: two agents of one group serve one account, each connected to a different
 * replica on one MariaDB. One holds the account and writes it; the other is told it stands by (never two writers);
 * when the holder is killed, the standby is promoted on its own replica, resumes, and the cache checker's diff is 0.
 * The account never goes missing while one of them is connected.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
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
});
