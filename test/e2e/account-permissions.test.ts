/**
 * Account permissions end to end: an agent process configures two accounts with permissions and options, they
 * travel over Hello into the plugin-server's account record (persisted in MariaDB), /credentials shows them as
 * Fiat reads them, and a caller whose X-SPINNAKER-ACCOUNTS (Gate's list of the user's WRITE accounts) names one
 * account cannot run operations on the other, while its own account works; the header filters no read (READ is
 * Fiat's, per user: test/unit/plugin-server/fiat-reads.test.ts).
 */
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, testEnv, waitFor } from '../infra/index.js';
import type { AgentAccountSpec, AgentProcess, PluginServerProcess } from '../infra/processes.js';
import { startStack, type Stack } from '../infra/stack.js';
import { OpsClient, type Obj } from './operations-helpers.js';

describe('account permissions and X-SPINNAKER-ACCOUNTS end to end', () => {
  let server: PluginServerProcess;
  let ops: OpsClient;
  let stack: Stack;
  let nsA: string;
  let nsB: string;
  let agent: AgentProcess;
  let accounts: AgentAccountSpec[];

  beforeAll(async () => {
    stack = await startStack({ name: 'perms', store: 'mysql', namespaces: ['perm-a', 'perm-b'] });
    [nsA, nsB] = stack.namespaces as [string, string];
    server = stack.server;
    for (const ns of [nsA, nsB]) await kubectl(['create', 'configmap', 'cm', '-n', ns, '--from-literal=k=v']);
    ops = new OpsClient(server);
    const admin = testEnv().kubeconfig;
    accounts = [
      {
        name: 'perm-a',
        kubeconfigFile: admin,
        namespaces: [nsA],
        kinds: ['ConfigMap'],
        permissions: { READ: ['Team-A', 'viewers'], WRITE: ['Team-A'] },
        onlySpinnakerManaged: true,
      },
      {
        name: 'perm-b',
        kubeconfigFile: admin,
        namespaces: [nsB],
        kinds: ['ConfigMap'],
        permissions: { READ: ['team-b'], WRITE: ['team-b'] },
        cacheAllApplicationRelationships: true,
      },
    ];
    agent = await stack.addAgent({ agentId: 'perms', accounts });
    // The agent is up once its stream is; each account's initial sync may still be on its way (a loaded machine).
    await waitFor('both ConfigMaps in the cache', async () => {
      for (const [account, ns] of [
        ['perm-a', nsA],
        ['perm-b', nsB],
      ] as const) {
        const r = await fetch(`${server.httpBase}/manifests/${account}/${ns}/configMap%20cm`);
        if (r.status !== 200) return false;
      }
      return true;
    });
  });
  afterAll(async () => {
    await stack?.stop();
  });

  const request = async (path: string, accounts?: string, body?: unknown): Promise<{ status: number; body: Obj }> => {
    const res = await fetch(server.httpBase + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(accounts === undefined ? {} : { 'X-SPINNAKER-ACCOUNTS': accounts }),
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : {}) as Obj };
  };

  const deployConfigMap = (account: string, namespace: string, name: string) => [
    {
      deployManifest: {
        account,
        cloudProvider: 'kubernetes',
        source: 'text',
        moniker: { app: 'perms' },
        namespaceOverride: namespace,
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            // Unversioned, so the name is the one given (Spinnaker versions ConfigMaps by default: name-v000).
            metadata: { name, annotations: { 'strategy.spinnaker.io/versioned': 'false' } },
            data: { k: 'v' },
          },
        ],
      },
    },
  ];

  it('/credentials shows each account with its permissions as Fiat reads them and its options', async () => {
    const all = await request('/credentials?expand=true');
    expect(all.status).toBe(200);
    const byName = new Map((all.body as unknown as Obj[]).map((a) => [a.name as string, a]));
    expect(byName.get('perm-a')).toMatchObject({
      cloudProvider: 'kubernetes',
      permissions: { READ: ['team-a', 'viewers'], WRITE: ['team-a'] },
      namespaces: [nsA],
      kinds: ['ConfigMap'],
      onlySpinnakerManaged: true,
      cacheAllApplicationRelationships: false,
    });
    expect(byName.get('perm-b')).toMatchObject({
      permissions: { READ: ['team-b'], WRITE: ['team-b'] },
      onlySpinnakerManaged: false,
      cacheAllApplicationRelationships: true,
    });
    // The summary Fiat reads carries the permissions too.
    const summary = (await request('/credentials')).body as unknown as Obj[];
    expect(summary.find((a) => a.name === 'perm-b')).toMatchObject({ permissions: { READ: ['team-b'] } });
    expect(summary.find((a) => a.name === 'perm-b')).not.toHaveProperty('namespaces');
  });

  it('the account record in MariaDB holds the permissions and options as configured', async () => {
    const conn = await mysql.createConnection((stack.storage as { url: string }).url);
    try {
      const [rows] = await conn.query<RowDataPacket[]>(
        "SELECT name, record FROM sa_accounts WHERE name IN ('perm-a', 'perm-b') ORDER BY name",
      );
      const records = rows.map((r) => JSON.parse(r.record as string) as Obj);
      expect(records).toEqual([
        expect.objectContaining({
          name: 'perm-a',
          permissions: { READ: ['Team-A', 'viewers'], WRITE: ['Team-A'] },
          onlySpinnakerManaged: true,
          cacheAllApplicationRelationships: false,
        }),
        expect.objectContaining({
          name: 'perm-b',
          permissions: { READ: ['team-b'], WRITE: ['team-b'] },
          onlySpinnakerManaged: false,
          cacheAllApplicationRelationships: true,
        }),
      ]);
    } finally {
      await conn.end();
    }
  });

  it('with X-SPINNAKER-ACCOUNTS: perm-a, perm-b is refused for operations and still readable (no Fiat here)', async () => {
    for (const path of ['/credentials', '/credentials?expand=true']) {
      const r = await request(path, 'perm-a');
      expect(r.status).toBe(200);
      expect((r.body as unknown as Obj[]).map((a) => a.name).sort()).toEqual(['perm-a', 'perm-b']);
    }
    expect((await request('/credentials/perm-b', 'perm-a')).body).toMatchObject({ name: 'perm-b' });
    expect((await request(`/manifests/perm-b/${nsB}/configMap%20cm`, 'perm-a')).status).toBe(200);
    expect((await request(`/manifests/perm-a/${nsA}/configMap%20cm`, 'perm-a')).status).toBe(200);

    for (const path of ['/kubernetes/ops', '/ops']) {
      const refused = await request(path, 'perm-a', deployConfigMap('perm-b', nsB, 'refused'));
      expect(refused.status, JSON.stringify(refused.body)).toBe(403);
      expect(refused.body).toMatchObject({ code: 'SA_ERR_FORBIDDEN' });
    }
    // Nothing reached the cluster: perm-b's namespace holds only what the test and Kubernetes put there.
    const names = await kubectl(['get', 'configmaps', '-n', nsB, '-o', 'jsonpath={.items[*].metadata.name}']);
    expect(names.stdout.split(' ').sort()).toEqual(['cm', 'kube-root-ca.crt']);

    const accepted = await request('/kubernetes/ops', 'perm-a', deployConfigMap('perm-a', nsA, 'allowed'));
    expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
    const task = await ops.waitTask(accepted.body.id as string);
    expect(task.status.failed, task.history.map((h) => h.status).join('\n')).toBe(false);
    const read = await request(`/manifests/perm-a/${nsA}/configMap%20allowed`, 'perm-a');
    expect(read.status).toBe(200);
    expect(read.body.manifest).toMatchObject({ data: { k: 'v' } });
  });

  it('a config reload that changes only the permissions updates the served account on the running stream', async () => {
    agent.writeAccounts(accounts.map((a) => (a.name === 'perm-b' ? { ...a, permissions: { READ: ['Auditors'] } } : a)));
    await waitFor('perm-b with the new permissions', async () => {
      const r = await request('/credentials/perm-b');
      return JSON.stringify(r.body.permissions) === JSON.stringify({ READ: ['auditors'] });
    });
    // perm-a is unchanged, and perm-b still serves its objects.
    expect((await request('/credentials/perm-a')).body.permissions).toEqual({
      READ: ['team-a', 'viewers'],
      WRITE: ['team-a'],
    });
    expect((await request(`/manifests/perm-b/${nsB}/configMap%20cm`)).status).toBe(200);
  });
});
