/**
 * A replica that loses MySQL (its link cut by Toxiproxy) reports not ready, stops holding agents, and its agent
 * reconnects through HAProxy to the replica that still has the database, which resumes the account; the cache
 * checker's diff is 0 through that replica.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import { startStack, type Stack } from '../infra/stack.js';
import { Toxiproxy } from '../infra/toxiproxy.js';

describe('a replica that loses MySQL', () => {
  let stack: Stack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('reports not ready and lets its agent go to a replica that has the database', async () => {
    stack = await startStack({
      name: 'store-loss',
      store: 'mysql',
      server: { extra: { accounts: { gracePeriodSeconds: 60, leaseSeconds: 3 } } },
    });
    const { ns, server: a, storage } = stack;
    if (storage.type !== 'mysql') throw new Error('a mysql stack without a database URL');

    // Toxiproxy between replica B and MariaDB.
    const toxi = await Toxiproxy.start(stack.dir);
    stack.defer(() => toxi.stop());
    const viaProxy = new URL(storage.url);
    viaProxy.host = await toxi.createProxy('mysql', viaProxy.host);
    const b = await stack.addReplica({ name: 'replica-b', storage: { type: 'mysql', url: viaProxy.toString() } });
    const lb = await stack.addLoadBalancer();

    // A down for a moment, so the agent's stream lands on B through the load balancer.
    await a.stop();
    await waitFor('HAProxy to mark A down', async () =>
      (await fetch(`${lb.httpBase}/readyz`)).ok && !(await fetch(`${a.httpBase}/readyz`).catch(() => undefined))
        ? true
        : undefined,
    );
    await sleep(1000);
    await stack.addAgent({ accounts: [{ name: 'cut', kinds: ['ConfigMap'] }] });
    await waitFor('B to hold the account', async () =>
      (await b.get<{ heldBy: unknown }>('/armory/accounts/cut')).body.heldBy === 'local' ? true : undefined,
    );
    await a.restart();
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
