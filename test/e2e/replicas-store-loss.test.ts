/**
 * A replica that loses MySQL (its link cut by Toxiproxy) reports not ready, stops holding agents, and its agent
 * reconnects through HAProxy to the replica that still has the database, which resumes the account; the cache
 * checker's diff is 0 through that replica.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import { agentOnLinkedReplica } from '../infra/linked-replica.js';
import { startReplicas, type Stack } from '../infra/stack.js';

describe('a replica that loses MySQL', () => {
  let stack: Stack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('reports not ready and lets its agent go to a replica that has the database', async () => {
    stack = await startReplicas('store-loss', { gracePeriodSeconds: 60, leaseSeconds: 3 }, { replicas: 1 });
    const { ns, server: a } = stack;
    // Replica B on MariaDB through Toxiproxy; A down for a moment, so the agent's stream lands on B through HAProxy.
    const { toxi, linked: b } = await agentOnLinkedReplica(stack, {
      replica: 'replica-b',
      account: 'cut',
      agent: { accounts: [{ name: 'cut', kinds: ['ConfigMap'] }] },
    });
    await kubectl(['create', 'configmap', 'before', '-n', ns, '--from-literal=k=v']);
    const check = stack.cacheCheck('cut', { httpBase: a.httpBase });
    await waitForCacheToMatch(check);

    // Cut B's database link.
    await toxi.setEnabled('mysql', false);
    const notReady = await waitFor('B to report not ready', async () => {
      const r = await b.get<{ reasons?: string[] }>('/readyz');
      return r.status === 503 ? r.body : undefined;
    });
    expect(JSON.stringify(notReady)).toMatch(/store|lease/);
    // The agent moved to A, which holds the account and resumed it; no change was needed to make it move (an idle
    // stream is let go by B itself, not broken by a failed write).
    // Bounded by a lease period plus the agent's reconnect backoff, well under the session idle timeout that would
    // otherwise end the stream much later.
    await waitFor(
      'A to hold the account',
      async () => {
        const v = (await a.get<{ heldBy: unknown; state: string }>('/armory/accounts/cut')).body;
        return v.heldBy === 'local' && v.state === 'ACTIVE' ? true : undefined;
      },
      30_000,
    );
    await kubectl(['create', 'configmap', 'after', '-n', ns, '--from-literal=k=v']);
    await waitForCacheToMatch(check);
  });
});
