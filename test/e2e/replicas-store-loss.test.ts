/**
 * A replica that loses MySQL (its link cut by Toxiproxy) reports not ready, stops holding agents, and its agent
 * reconnects through HAProxy to the replica that still has the database, which resumes the account; the cache
 * checker's diff is 0 through that replica.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { Haproxy } from '../infra/haproxy.js';
import { createNamespace, createTestDatabase, kubectl, testEnv, waitFor } from '../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../infra/processes.js';
import { Toxiproxy } from '../infra/toxiproxy.js';

describe('a replica that loses MySQL', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('reports not ready and lets its agent go to a replica that has the database', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-agent-e2e-store-loss-'));
    const ns = await createNamespace('store-loss');
    cleanups.push(() => kubectl(['delete', 'namespace', ns, '--wait=false'], { allowFail: true }));
    const db = await createTestDatabase('e2e_store_loss');
    cleanups.push(() => db.drop());

    // Toxiproxy between replica B and MariaDB.
    const toxi = await Toxiproxy.start(dir);
    cleanups.push(() => toxi.stop());
    const viaProxy = new URL(db.url);
    viaProxy.host = await toxi.createProxy('mysql', new URL(db.url).host);

    const extra = { accounts: { gracePeriodSeconds: 60, leaseSeconds: 3 } };
    const a = await PluginServerProcess.start({
      dir,
      name: 'replica-a',
      storage: { type: 'mysql', url: db.url },
      extra,
    });
    cleanups.push(() => a.stop());
    const b = await PluginServerProcess.start({
      dir,
      name: 'replica-b',
      storage: { type: 'mysql', url: viaProxy.toString() },
      extra,
    });
    cleanups.push(() => b.stop());
    const lb = await Haproxy.start({
      dir,
      backends: [a, b].map((r, i) => ({ name: `r${i}`, grpcPort: r.grpcPort, httpPort: r.httpPort })),
    });
    cleanups.push(() => lb.stop());

    // A down for a moment, so the agent's stream lands on B through the load balancer.
    await a.stop();
    await waitFor('HAProxy to mark A down', async () =>
      (await fetch(`${lb.httpBase}/readyz`)).ok && !(await fetch(`${a.httpBase}/readyz`).catch(() => undefined))
        ? true
        : undefined,
    );
    await sleep(1000);
    const spec = { name: 'cut', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] };
    const agent = await AgentProcess.start({ dir, serverAddress: lb.grpcAddress, accounts: [spec] });
    cleanups.push(() => agent.stop());
    await waitFor('B to hold the account', async () =>
      (await b.get<{ heldBy: unknown }>('/armory/accounts/cut')).body.heldBy === 'local' ? true : undefined,
    );
    await a.restart();
    await kubectl(['create', 'configmap', 'before', '-n', ns, '--from-literal=k=v']);
    const check = {
      httpBase: a.httpBase,
      account: 'cut',
      kubeconfig: testEnv().kubeconfig,
      namespaces: [ns],
      kinds: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaced: true }],
    };
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
