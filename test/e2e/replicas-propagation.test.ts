/**
 * What one replica learns, every replica answers for: two real plugin-server processes on one MariaDB, a real agent
 * on each. Dynamic accounts live in the store, the truth every replica follows (read through on a miss, polled
 * otherwise), and are written conditionally; an account an agent registers through one replica is served by the
 * other before that one's next lease refresh (it reads through to the store and forwards the operation).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, testEnv, waitFor } from '../infra/index.js';
import { sendJson, type AgentAccountSpec, type AgentProcess, type PluginServerProcess } from '../infra/processes.js';
import { startReplicas, type Stack } from '../infra/stack.js';
import { OpsClient, type Obj } from './operations-helpers.js';

const send = (server: PluginServerProcess, method: string, path: string, body?: unknown) =>
  sendJson<Obj>(server.httpBase + path, method, body);

const until = <T>(what: string, probe: () => Promise<T | undefined>) => waitFor(what, probe, 30_000);

describe('replicas follow the store', () => {
  let stack: Stack;
  let a: PluginServerProcess;
  let b: PluginServerProcess;
  let agentA: AgentProcess;
  let agentB: AgentProcess;
  let ns: string;
  const staticAccount = (name: string): AgentAccountSpec => ({
    name,
    kubeconfigFile: testEnv().kubeconfig,
    namespaces: [ns],
    kinds: ['ConfigMap'],
  });

  beforeAll(async () => {
    // The default lease: replicas refresh every 5 s, the window case 8 is about.
    stack = await startReplicas('propagation', { gracePeriodSeconds: 60, leaseSeconds: 15 });
    ({ ns } = stack);
    [a, b] = stack.pair;
    agentA = await stack.addAgent({ agentId: 'agent-a', serverAddress: a.grpcAddress, accounts: [] });
    agentB = await stack.addAgent({ agentId: 'agent-b', serverAddress: b.grpcAddress, accounts: [] });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('a dynamic account created on A is one on B at once: get, list and update there', async () => {
    const created = await send(a, 'POST', '/armory/accounts/dynamic', {
      name: 'dyn-made-on-a',
      kubeconfigFile: testEnv().kubeconfig,
      namespaces: [ns],
      kinds: ['ConfigMap'],
      state: 'INACTIVE',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    // Right away: B reads through to the store on the miss.
    const got = await send(b, 'GET', '/armory/accounts/dyn-made-on-a');
    expect(got.status, JSON.stringify(got.body)).toBe(200);
    expect(got.body).toMatchObject({ name: 'dyn-made-on-a', dynamic: true, state: 'INACTIVE' });
    const listed = await send(b, 'GET', '/armory/accounts');
    expect((listed.body.items as Obj[]).filter((i) => i.name === 'dyn-made-on-a')).toHaveLength(1);
    const updated = await send(b, 'PUT', '/armory/accounts/dynamic', { name: 'dyn-made-on-a', kinds: ['Secret'] });
    expect(updated.status, JSON.stringify(updated.body)).toBe(202);
    // A follows B's update (polled, or read through by the next write).
    await until('A to follow the update made on B', async () => {
      const r = await send(a, 'GET', '/armory/accounts/dyn-made-on-a');
      return (r.body.kinds as string[]).includes('Secret') ? r : undefined;
    });
  });

  it('updates of one account on both replicas at once: none lost silently, a loser hears 409 naming it', async () => {
    const name = 'dyn-contended';
    const created = await send(a, 'POST', '/armory/accounts/dynamic', {
      name,
      kubeconfigFile: testEnv().kubeconfig,
      state: 'INACTIVE',
    });
    expect(created.status).toBe(201);
    for (let round = 1; round <= 10; round++) {
      // Different fields, so both survive when applied one after the other; a lost update drops one.
      const [viaA, viaB] = await Promise.all([
        send(a, 'PUT', '/armory/accounts/dynamic', { name, namespaces: [`ns-${round}`] }),
        send(b, 'PUT', '/armory/accounts/dynamic', { name, kinds: [`Kind${round}`] }),
      ]);
      const statuses = [viaA.status, viaB.status].sort();
      expect([JSON.stringify([202, 202]), JSON.stringify([202, 409])]).toContain(JSON.stringify(statuses));
      for (const r of [viaA, viaB].filter((x) => x.status === 409)) {
        expect(r.body.code).toBe('SA_ERR_CONFLICT');
        expect(r.body.message).toMatch(new RegExp(`dynamic account ${name} was changed through another replica`));
      }
      const stored = (await send(a, 'GET', `/armory/accounts/${name}`)).body;
      if (viaA.status === 202) expect(stored.namespaces).toEqual([`ns-${round}`]);
      if (viaB.status === 202) expect(stored.kinds).toEqual([`Kind${round}`]);
    }
  });

  it('a delete on A drops an account B’s agent streams: the agent is told, every replica forgets it', async () => {
    const name = 'dyn-held-on-b';
    await kubectl(['create', 'configmap', 'held-on-b', '-n', ns, '--from-literal=k=v']);
    // Created through B: B's agent is the one it is placed on.
    const created = await send(b, 'POST', '/armory/accounts/dynamic', {
      name,
      kubeconfigFile: testEnv().kubeconfig,
      namespaces: [ns],
      kinds: ['ConfigMap'],
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    await until('agent-b to hold it and A to see it held', async () => {
      const r = await send(a, 'GET', `/armory/accounts/${name}`);
      return r.status === 200 && r.body.state === 'ACTIVE' && r.body.agentId === 'agent-b' ? r : undefined;
    });
    const deleted = await send(a, 'DELETE', `/armory/accounts/${name}`);
    expect(deleted.status, JSON.stringify(deleted.body)).toBe(202);
    await until('agent-b to stop watching it', async () => {
      const res = await fetch(`${agentB.adminBase}/accounts`);
      return (await res.text()).includes(name) ? undefined : true;
    });
    for (const server of [a, b]) {
      await until(`${server.httpBase} to forget it`, async () => {
        const r = await send(server, 'GET', `/armory/accounts/${name}`);
        const cache = await send(server, 'GET', `/admin/cache/${name}`);
        return r.status === 404 && cache.status === 404 ? true : undefined;
      });
    }
  });

  it('an operation posted to B right after the account registered through A runs (B reads through, forwards)', async () => {
    // B refreshes every 5 s; each round checks B did not learn the account meanwhile, or tries a new one.
    for (let attempt = 1; ; attempt++) {
      const name = `registered-on-a-${attempt}`;
      agentA.writeAccounts([staticAccount(name)]);
      await until(`A to hold ${name}`, async () => {
        const r = await send(a, 'GET', `/credentials/${name}`);
        return r.status === 200 ? r : undefined;
      });
      if ((await send(b, 'GET', `/credentials/${name}`)).status === 200) {
        if (attempt >= 5) throw new Error('replica B refreshed within every attempt; the window was never hit');
        continue;
      }
      const task = await new OpsClient(b).run([
        {
          deployManifest: {
            account: name,
            moniker: { app: 'propagation' },
            namespaceOverride: ns,
            manifests: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                metadata: { name: `via-b-${attempt}`, annotations: { 'strategy.spinnaker.io/versioned': 'false' } },
                data: { attempt: String(attempt) },
              },
            ],
          },
        },
      ]);
      expect(task.history.map((h) => h.status).join('\n')).toMatch(/Sent deployManifest to agent /);
      const live = JSON.parse(
        (await kubectl(['get', 'configmap', `via-b-${attempt}`, '-n', ns, '-o', 'json'])).stdout,
      ) as Obj;
      expect(live.data).toEqual({ attempt: String(attempt) });
      return;
    }
  });
});
