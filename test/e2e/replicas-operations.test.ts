/**
 * Operations posted to a plugin-server replica whose peer holds the account's agent, end to end with real
 * processes on one MariaDB: the task runs through the peer (forwarded to its REST address), completes only once
 * the cache holds what it wrote — read back from the replica it was posted to, right away (the barrier across
 * replicas) — clientRequestId dedupes across replicas, and a task's cancel posted to either replica reaches the
 * replica running it and the agent behind its peer.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, waitFor } from '../infra/index.js';
import { peerSecretFile, type PluginServerProcess } from '../infra/processes.js';
import { startReplicas, type Stack } from '../infra/stack.js';
import { deployBody, OpsClient, unversionedConfigMap, type Obj } from './operations-helpers.js';

// Unversioned, so every round replaces the same object.
const configMap = (name: string, round: number): Obj => unversionedConfigMap(name, { round: String(round) });

describe('operations posted to any replica', () => {
  let stack: Stack;
  let a: PluginServerProcess;
  let b: PluginServerProcess;
  let ns: string;
  let dir: string;
  const account = 'ops-shared';

  beforeAll(async () => {
    stack = await startReplicas(
      'replica-ops',
      { gracePeriodSeconds: 30, leaseSeconds: 3 },
      { agent: { accounts: [{ name: account, kinds: ['ConfigMap'] }] } },
    );
    [a, b] = stack.pair;
    ns = stack.ns;
    dir = stack.dir;
    // B learns from the shared leases that A holds the account.
    await waitFor(`replica B to see ${account} held`, async () => {
      const r = await b.get<{ state: string }>(`/armory/accounts/${account}`);
      return r.status === 200 && r.body.state === 'ACTIVE';
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('a deploy posted to the replica without the agent runs through its peer; its reads show it at once', async () => {
    const viaB = new OpsClient(b);
    const viaA = new OpsClient(a);
    for (let round = 1; round <= 10; round++) {
      const task = await viaB.run(deployBody(account, 'fwd', ns, [configMap('fwd', round)]));
      expect(task.history.map((h) => h.status).join('\n')).toMatch(/Sent deployManifest to agent /);
      // The barrier across replicas: the replica the task was posted to (and its peer) already serve this round.
      for (const ops of [viaB, viaA]) {
        const read = await ops.manifest(account, ns, 'configMap fwd');
        expect(read.status, `${ops.server.httpBase} ${JSON.stringify(task.history)}`).toBe(200);
        expect(read.body.manifest.data).toEqual({ round: String(round) });
      }
    }
    const live = JSON.parse((await kubectl(['get', 'configmap', 'fwd', '-n', ns, '-o', 'json'])).stdout) as Obj;
    expect(live.data).toEqual({ round: '10' });
  });

  it('the same clientRequestId posted to both replicas is one task', async () => {
    const body = [
      {
        deployManifest: { account, moniker: { app: 'idem' }, namespaceOverride: ns, manifests: [configMap('idem', 1)] },
      },
    ];
    const first = await new OpsClient(b).submit(body, 'replicas-idem-1');
    const second = await new OpsClient(a).submit(body, 'replicas-idem-1');
    expect(second).toBe(first);
    const done = await new OpsClient(a).waitTask(first);
    expect(done.status.failed).toBe(false);
    // Ran once: one history line saying it was sent.
    expect(done.history.filter((h) => /^Sent deployManifest/.test(h.status))).toHaveLength(1);
  });

  it('a cancel posted to the replica not running the task reaches it, and its agent through the peer', async () => {
    const cancels = async (): Promise<number> => {
      const text = await (await fetch(`${stack.agent.adminBase}/metrics`)).text();
      const name = 'scale_agent_agent_operation_cancels_total{decision="run-to-end"}';
      const line = text.split('\n').find((l) => l.startsWith(name));
      return line ? Number(line.split(' ').at(-1)) : 0;
    };
    const before = await cancels();
    const held = async () =>
      JSON.parse((await kubectl(['get', 'configmap', 'held', '-n', ns, '-o', 'json'])).stdout) as Obj;
    const finalizers = (patch: string) =>
      kubectl(['patch', 'configmap', 'held', '-n', ns, '--type=merge', '-p', `{"metadata":{"finalizers":${patch}}}`]);
    await kubectl(['create', 'configmap', 'held', '-n', ns, '--from-literal=a=1']);
    await finalizers('["scale-agent.test/hold"]');
    const viaB = new OpsClient(b);
    let id: string;
    try {
      id = await viaB.submit([
        {
          deleteManifest: {
            account,
            location: ns,
            manifestName: 'configMap held',
            options: { waitTimeoutSeconds: 300 },
          },
        },
      ]);
      // Its DELETE went out (through A's stream): the operation waits on A's agent for the object to go.
      await waitFor('held terminating', async () => !!(await held()).metadata.deletionTimestamp);
      // Posted to A: B runs the task, and A holds the agent's stream. The cancel goes A → B (the task's replica, found
      // through the view B publishes) → A (its forwarded run) → agent, which lets the delete finish.
      const r = await new OpsClient(a).post(`/scale-agent/tasks/${id}/cancel`, {});
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.cancelling).toBe(true);
      await waitFor('the agent to get the Cancel', async () => (await cancels()) === before + 1);
    } finally {
      // Released either way: a finalizer left behind would hold the namespace's deletion.
      await finalizers('null');
    }
    const t = await viaB.waitTask(id);
    const history = t.history.map((h) => h.status);
    expect(t.status.failed, history.join('\n')).toBe(false);
    expect(history).toContainEqual(expect.stringMatching(/after a write went out: ran to its end$/));
  });

  it('the forwarding route refuses a malformed request with a stable code, nothing run', async () => {
    // As a peer replica calls it (replicas-peer-auth.test.ts: nobody else gets this far).
    const headers = {
      'content-type': 'application/json',
      authorization: `Bearer ${readFileSync(peerSecretFile(dir), 'utf8').trim()}`,
    };
    const res = await fetch(`${a.httpBase}/internal/operations`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ account, type: 'rmRf' }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { code: string }).code).toBe('SA_ERR_INVALID_INPUT');

    // What a replica of the previous version forwards: a duration, no epoch deadline (docs/upgrading.md).
    const older = await fetch(`${a.httpBase}/internal/operations`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        operationId: 'older-peer.0',
        account,
        type: 'liveGet',
        payload: { target: { location: ns, kind: 'configMap', name: 'idem' } },
        timeoutMs: 30_000,
        cacheWaitMs: 1000,
      }),
    });
    expect(older.status).toBe(400);
    expect(await older.json()).toMatchObject({
      code: 'SA_ERR_INVALID_INPUT',
      message: "body must have required property 'deadlineMs'",
    });
  });
});
