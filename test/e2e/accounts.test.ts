/**
 * Accounts end to end: filters cache exactly what they say, an account without rights to a kind caches the rest,
 * a duplicate account name from another cluster is rejected while the original keeps working, and a config
 * reload adds and removes accounts on a running agent (on its running stream).
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ControlPlane, createNamespace, createServiceAccount, kubectl, testEnv, waitFor } from '../infra/index.js';
import { AgentProcess, PluginServerProcess, type AgentAccountSpec } from '../infra/processes.js';
import { eventually } from '../unit/plugin-server/helpers.js';

type CacheEntry = { kind: string; namespace: string; name: string };

describe('accounts end to end', () => {
  let dir: string;
  let server: PluginServerProcess;
  const cleanups: (() => Promise<unknown>)[] = [];
  let ns1: string;
  let ns2: string;
  let ns3: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'scale-agent-e2e-accounts-'));
    server = await PluginServerProcess.start({ dir, gracePeriodSeconds: 2 });
    cleanups.push(() => server.stop());
    [ns1, ns2, ns3] = await Promise.all([
      createNamespace('filt-a'),
      createNamespace('filt-b'),
      createNamespace('filt-c'),
    ]);
    for (const ns of [ns1, ns2, ns3]) {
      await kubectl(['create', 'configmap', 'cm', '-n', ns, '--from-literal=k=v']);
      await kubectl(['create', 'secret', 'generic', 'sec', '-n', ns, '--from-literal=k=v']);
    }
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    for (const ns of [ns1, ns2, ns3]) await kubectl(['delete', 'namespace', ns, '--wait=false'], { allowFail: true });
  });

  const cached = async (account: string): Promise<string[]> => {
    const r = await server.get<CacheEntry[]>(`/admin/cache/${account}`);
    if (r.status !== 200) return [];
    return (
      r.body
        // kube-root-ca.crt is the controller-manager's, in every namespace; the rest is ours.
        .filter((e) => [ns1, ns2, ns3].includes(e.namespace) && e.name !== 'kube-root-ca.crt')
        .map((e) => `${e.kind} ${e.namespace === ns1 ? 'ns1' : e.namespace === ns2 ? 'ns2' : 'ns3'}/${e.name}`)
        .sort()
    );
  };

  it('kinds, omitKinds, namespaces and omitNamespaces filter exactly; missing RBAC rights skip only that kind', async () => {
    const sa = await createServiceAccount({
      namespace: ns1,
      name: 'cm-reader',
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    const admin = testEnv().kubeconfig;
    const accounts: AgentAccountSpec[] = [
      { name: 'f-kinds', kubeconfigFile: admin, namespaces: [ns1, ns2], kinds: ['ConfigMap'] },
      { name: 'f-omitkinds', kubeconfigFile: admin, namespaces: [ns1], omitKinds: ['ConfigMap'] },
      { name: 'f-omitns', kubeconfigFile: admin, omitNamespaces: [ns2], kinds: ['ConfigMap'] },
      { name: 'f-rbac', kubeconfigFile: sa.kubeconfigPath, namespaces: [ns1], kinds: ['ConfigMap', 'Secret'] },
    ];
    const agent = await AgentProcess.start({ dir, serverAddress: server.grpcAddress, accounts, agentId: 'filters' });
    cleanups.push(() => agent.stop());

    // The agent is ready once it has listed; the server applies what it streamed a moment later (longer on a loaded
    // machine), so each account's cache is read once it holds what the filters let through.
    const settled = async (account: string, expected: string[]) => {
      await waitFor(
        `${account} cached`,
        async () => JSON.stringify(await cached(account)) === JSON.stringify(expected),
        30_000,
      ).catch(() => undefined);
      return cached(account);
    };
    expect(await settled('f-kinds', ['ConfigMap ns1/cm', 'ConfigMap ns2/cm'])).toEqual([
      'ConfigMap ns1/cm',
      'ConfigMap ns2/cm',
    ]);
    await waitFor('f-omitkinds cached', async () => (await cached('f-omitkinds')).includes('Secret ns1/sec'), 30_000);
    const omitKinds = await cached('f-omitkinds');
    expect(omitKinds).toContain('Secret ns1/sec');
    expect(omitKinds.filter((e) => e.startsWith('ConfigMap'))).toEqual([]);
    expect(omitKinds.every((e) => e.includes(' ns1/'))).toBe(true);
    expect(await settled('f-omitns', ['ConfigMap ns1/cm', 'ConfigMap ns3/cm'])).toEqual([
      'ConfigMap ns1/cm',
      'ConfigMap ns3/cm',
    ]);
    expect(await settled('f-rbac', ['ConfigMap ns1/cm'])).toEqual(['ConfigMap ns1/cm']);
    const rbac = await eventually(
      () => server.get<{ forbiddenKinds: string[]; status: string }>('/agents/kubernetes/accounts/f-rbac'),
      (r) => r.body.forbiddenKinds.length > 0,
    );
    expect(rbac.body.status).toBe('ACTIVE');
    expect(rbac.body.forbiddenKinds.join(',')).toMatch(/Secret/);
  });

  it('a duplicate account name from a different cluster is rejected; the original keeps working', async () => {
    const cp = await ControlPlane.start({ dir: join(dir, 'other-cluster') });
    cleanups.push(() => cp.stop());
    const original = await AgentProcess.start({
      dir,
      serverAddress: server.grpcAddress,
      agentId: 'original',
      accounts: [{ name: 'taken', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns3], kinds: ['ConfigMap'] }],
    });
    cleanups.push(() => original.stop());
    const impostor = await AgentProcess.start({
      dir,
      serverAddress: server.grpcAddress,
      agentId: 'impostor',
      accounts: [{ name: 'taken', kubeconfigFile: cp.kubeconfig, namespaces: ['default'], kinds: ['ConfigMap'] }],
    });
    cleanups.push(() => impostor.stop());

    const view = await impostor.metric('scale_agent_agent_connected');
    expect(view).toBe(1);
    const accounts = (await (await fetch(`${impostor.adminBase}/accounts`)).json()) as {
      name: string;
      state: string;
      rejectedReason?: string;
    }[];
    expect(accounts).toEqual([expect.objectContaining({ name: 'taken', state: 'rejected' })]);
    expect(accounts[0]!.rejectedReason).toMatch(/already registered by agent original/);

    const detail = await server.get<{ agentId: string; kubeHost: string; status: string }>(
      '/agents/kubernetes/accounts/taken',
    );
    expect(detail.body).toMatchObject({
      agentId: 'original',
      status: 'ACTIVE',
      kubeHost: new URL(testEnv().server).host,
    });
    await kubectl(['create', 'configmap', 'still-served', '-n', ns3, '--from-literal=k=v']);
    await eventually(
      () => server.get(`/manifests/taken/${ns3}/configMap%20still-served`),
      (r) => r.status === 200,
      30_000,
    );
  });

  it('config reload adds and removes accounts on the running stream (AccountsUpdate, no re-dial)', async () => {
    // A grace period far longer than the test waits: a removed account can only disappear at once if the agent
    // withdrew it on the running stream (a re-dial would leave it ORPHANED for the grace period).
    const reloadServer = await PluginServerProcess.start({ dir, gracePeriodSeconds: 600, name: 'ps-reload' });
    cleanups.push(() => reloadServer.stop());
    const admin = testEnv().kubeconfig;
    const first = { name: 'reload-a', kubeconfigFile: admin, namespaces: [ns1], kinds: ['ConfigMap'] };
    const second = { name: 'reload-b', kubeconfigFile: admin, namespaces: [ns2], kinds: ['ConfigMap'] };
    const agent = await AgentProcess.start({
      dir,
      serverAddress: reloadServer.grpcAddress,
      agentId: 'reloader',
      accounts: [first],
    });
    cleanups.push(() => agent.stop());
    const names = async () => (await reloadServer.get<{ name: string }[]>('/credentials')).body.map((a) => a.name);
    const cachedOn = async (account: string): Promise<string[]> => {
      const r = await reloadServer.get<CacheEntry[]>(`/admin/cache/${account}`);
      return r.status === 200 ? r.body.map((e) => `${e.kind} ${e.name}`) : [];
    };
    type Watch = { account: string; kind: string; relists: number };
    const watches = async () => (await (await fetch(`${agent.adminBase}/watches`)).json()) as Watch[];
    expect(await names()).toContain('reload-a');
    const before = (await watches()).find((w) => w.account === 'reload-a');
    expect(before?.relists).toBe(1);

    agent.writeAccounts([first, second]);
    await eventually(
      () => cachedOn('reload-b'),
      (l) => l.includes('ConfigMap cm'),
      30_000,
    );
    expect(await names()).toEqual(expect.arrayContaining(['reload-a', 'reload-b']));
    // reload-a's watch ran on undisturbed: the same reflector (a new stream would have started a new one).
    expect((await watches()).find((w) => w.account === 'reload-a')?.relists).toBe(1);

    agent.writeAccounts([second]);
    await eventually(names, (l) => !l.includes('reload-a') && l.includes('reload-b'), 30_000);
    expect((await reloadServer.get(`/manifests/reload-a/${ns1}/configMap%20cm`)).status).toBe(404);
    // The account that stayed kept streaming.
    await kubectl(['create', 'configmap', 'after-reload', '-n', ns2, '--from-literal=k=v']);
    await eventually(
      () => cachedOn('reload-b'),
      (l) => l.includes('ConfigMap after-reload'),
      30_000,
    );
    expect(readFileSync(agent.logFile, 'utf8')).not.toContain('restarting the stream');
  });
});
