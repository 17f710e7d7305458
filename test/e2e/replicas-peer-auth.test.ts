/**
 * Replicas authenticate each other by the peer secret they share (http.peerAuth.secretFile), not by network, end to
 * end with two real plugin-server processes on one MariaDB and a real agent. Spinnaker calls from a trusted network
 * without a token (127.0.0.2 here, a loopback address of its own); the replicas themselves call from 127.0.0.1, which
 * is not trusted — as pod IPs outside the configured networks are. A token-less deploy posted to the replica
 * without the agent runs through its peer; /internal/* refuses every caller without the peer secret, whatever its
 * network or token, and with it runs only operations of tasks in the task store.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, waitFor } from '../infra/index.js';
import { peerSecretFile, type PluginServerProcess } from '../infra/processes.js';
import { startStack, type Stack } from '../infra/stack.js';
import { deployBody, unversionedConfigMap, type Obj, type TaskBody } from './operations-helpers.js';

const ADMIN_TOKEN = 'peer-auth-admin-token-0123456789';

/** An HTTP call from `localAddress` (the trusted Spinnaker network, or not), with optional headers. */
function call(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; localAddress?: string } = {},
): Promise<{ status: number; body: Obj }> {
  const url = new URL(path, base);
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method,
        localAddress: options.localAddress ?? '127.0.0.2',
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...options.headers },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: (text ? JSON.parse(text) : {}) as Obj }));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const account = 'peer-auth';

describe('replicas authenticate each other by the peer secret, not by network', () => {
  let stack: Stack;
  let a: PluginServerProcess;
  let b: PluginServerProcess;

  beforeAll(async () => {
    // The replicas are added once their tokens file is in the stack's directory.
    stack = await startStack({ name: 'peer-auth', store: 'mysql', replicas: 0 });
    const tokensFile = join(stack.dir, 'tokens');
    writeFileSync(tokensFile, `${ADMIN_TOKEN} operator admin\n`);
    const extra = {
      accounts: { gracePeriodSeconds: 30, leaseSeconds: 3 },
      // Spinnaker's network only: the replicas' own address (127.0.0.1) is not in it.
      http: { auth: { tokensFile, trustedNetworks: ['127.0.0.2/32'] } },
    };
    a = await stack.addReplica({ name: 'replica-a', extra });
    b = await stack.addReplica({ name: 'replica-b', extra });
    await stack.addAgent({ serverAddress: a.grpcAddress, accounts: [{ name: account, kinds: ['ConfigMap'] }] });
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    await waitFor(`replica B to see ${account} held`, async () => {
      const r = await call(b.httpBase, 'GET', `/armory/accounts/${account}`, { headers: admin });
      return r.status === 200 && r.body.state === 'ACTIVE';
    });
  });

  afterAll(async () => {
    await stack?.stop();
  });

  it('a token-less deploy from the trusted network, posted to the replica without the agent, runs through its peer', async () => {
    const body = deployBody(account, 'peer', stack.ns, [unversionedConfigMap('via-peer', { from: 'spinnaker' })]);
    const posted = await call(b.httpBase, 'POST', '/kubernetes/ops', { body });
    expect(posted.status, JSON.stringify(posted.body)).toBe(200);
    let task: TaskBody;
    for (;;) {
      const r = await call(b.httpBase, 'GET', `/task/${posted.body.id as string}`);
      task = r.body as TaskBody;
      if (task.status.completed) break;
      await sleep(50);
    }
    expect(task.status.failed, task.history.map((h) => h.status).join('\n')).toBe(false);
    const live = JSON.parse(
      (await kubectl(['get', 'configmap', 'via-peer', '-n', stack.ns, '-o', 'json'])).stdout,
    ) as Obj;
    expect(live.data).toEqual({ from: 'spinnaker' });
  });

  it('/internal/operations refuses a trusted-network caller and an admin token: 401 naming the peer secret, nothing run', async () => {
    const op = {
      operationId: 'not-a-peer.0',
      account,
      type: 'deployManifest',
      payload: {
        manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'not-by-peer', namespace: stack.ns } }],
      },
      deadlineMs: Date.now() + 30_000,
      cacheWaitMs: 1000,
    };
    const callers: Record<string, string>[] = [{}, { authorization: `Bearer ${ADMIN_TOKEN}` }];
    for (const headers of callers) {
      for (const localAddress of ['127.0.0.2', '127.0.0.1']) {
        const r = await call(a.httpBase, 'POST', '/internal/operations', { body: op, headers, localAddress });
        expect(r.status, JSON.stringify(r.body)).toBe(401);
        expect(r.body.code).toBe('SA_ERR_UNAUTHENTICATED');
        expect(r.body.message).toMatch(/for plugin-server replicas.*peer secret.*http\.peerAuth\.secretFile/);
      }
    }
    const gone = await kubectl(['get', 'configmap', 'not-by-peer', '-n', stack.ns], { allowFail: true });
    expect(gone.code).not.toBe(0);
  });

  it('with the peer secret, an operation of no task in the task store is refused, nothing run', async () => {
    const secret = readFileSync(peerSecretFile(stack.dir), 'utf8').trim();
    const r = await call(a.httpBase, 'POST', '/internal/operations', {
      headers: { authorization: `Bearer ${secret}` },
      body: {
        operationId: 'no-such-task.0',
        account,
        type: 'deployManifest',
        payload: {
          manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'no-task', namespace: stack.ns } }],
        },
        deadlineMs: Date.now() + 30_000,
        cacheWaitMs: 1000,
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(404);
    expect(r.body.message).toMatch(/no-such-task\.0 .* no operation of a task in the task store/);
    const gone = await kubectl(['get', 'configmap', 'no-task', '-n', stack.ns], { allowFail: true });
    expect(gone.code).not.toBe(0);
  });
});
