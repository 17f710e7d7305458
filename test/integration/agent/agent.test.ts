import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Agent } from '../../../src/agent/index.js';
import type { WatchInfo } from '../../../src/agent/account.js';
import { AtomicVolume } from '../../infra/atomic-volume.js';
import { createNamespace, createServiceAccount, kubectl, testEnv } from '../../infra/index.js';
import { customResourceDefinition } from '../../infra/manifests.js';
import { PluginServerProcess } from '../../infra/processes.js';
import { logger, waitFor } from './_helpers.js';

let server: PluginServerProcess;
const agents: Agent[] = [];

beforeAll(async () => {
  server = await PluginServerProcess.start({ dir: mkdtempSync(join(tmpdir(), 'agent-it-ps-')) });
});
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
});
afterAll(async () => {
  await server?.stop();
});

function configText(accounts: object[]): string {
  return stringify({
    server: { address: server.grpcAddress, insecure: true, backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 2 } },
    agentId: `agent-it-${Math.random().toString(36).slice(2, 8)}`,
    admin: { host: '127.0.0.1', port: 0 },
    kubernetes: { accounts },
  });
}

async function startAgent(configFile: string): Promise<{ agent: Agent; admin: string }> {
  const agent = await Agent.start({ configFile, logger, configPollMs: 1000 });
  agents.push(agent);
  return { agent, admin: `http://127.0.0.1:${agent.admin.address?.port}` };
}

async function get<T>(url: string): Promise<{ status: number; body: T }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as T };
}

interface Readiness {
  ready: boolean;
  connected: boolean;
  accounts: Record<string, string>;
}

describe('agent with a real plugin-server', () => {
  it('reports a kind its ServiceAccount may not read once, skips it, and caches the rest', async () => {
    const ns = await createNamespace('agent-rbac');
    const sa = await createServiceAccount({
      namespace: ns,
      name: 'limited',
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    await kubectl(['create', 'configmap', 'visible', '-n', ns, '--from-literal=k=v']);
    await kubectl(['create', 'secret', 'generic', 'hidden', '-n', ns, '--from-literal=k=v']);
    const account = `limited-${ns}`;
    const dir = mkdtempSync(join(tmpdir(), 'agent-it-'));
    writeFileSync(
      join(dir, 'agent.yaml'),
      configText([
        { name: account, kubeconfigFile: sa.kubeconfigPath, namespaces: [ns], kinds: ['ConfigMap', 'Secret'] },
      ]),
    );
    const { admin } = await startAgent(join(dir, 'agent.yaml'));

    // Ready although Secrets are forbidden: forbidden kinds do not hold readiness back.
    const ready = await waitFor('readiness', async () => (await get<Readiness>(`${admin}/readyz`)).status === 200);
    expect(ready).toBe(true);
    const accounts = (
      await get<
        {
          name: string;
          forbiddenKinds: string[];
          cluster: { apiServerHost: string; caFingerprint: string; kubernetesVersion: string };
        }[]
      >(`${admin}/accounts`)
    ).body;
    // Both watches and discovery share one HTTP/2 connection.
    expect(accounts[0]).toMatchObject({ name: account, forbiddenKinds: ['Secret'], connections: 1 });
    expect(accounts[0]?.cluster.apiServerHost).toBe(new URL(testEnv().server).host);
    expect(accounts[0]?.cluster.caFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(accounts[0]?.cluster.kubernetesVersion).toMatch(/^v1\./);

    const manifest = await waitFor('configmap in the plugin-server cache', async () => {
      const r = await server.get<{ manifest?: { data?: Record<string, string> } }>(
        `/manifests/${account}/${ns}/configmap%20visible`,
      );
      return r.status === 200 ? r.body : undefined;
    });
    expect(manifest.manifest?.data).toEqual({ k: 'v' });
    expect((await server.get(`/manifests/${account}/${ns}/secret%20hidden`)).status).toBe(404);

    // Reported once and then left alone: the forbidden watch does not retry in a loop.
    const forbidden = (await get<WatchInfo[]>(`${admin}/watches?state=forbidden`)).body;
    expect(forbidden.map((w) => [w.kind, w.failures])).toEqual([['Secret', 1]]);
    await sleep(2000);
    const later = (await get<WatchInfo[]>(`${admin}/watches?state=forbidden`)).body;
    expect(later.map((w) => [w.kind, w.failures])).toEqual([['Secret', 1]]);
  });

  it("reloads its config on a ConfigMap's ..data symlink swap: accounts come and go, the others are not relisted", async () => {
    const [nsA, nsB] = [await createNamespace('agent-reload-a'), await createNamespace('agent-reload-b')];
    await kubectl(['create', 'configmap', 'in-a', '-n', nsA]);
    await kubectl(['create', 'configmap', 'in-b', '-n', nsB]);
    const kubeconfig = testEnv().kubeconfig;
    const a = { name: `reload-a-${nsA}`, kubeconfigFile: kubeconfig, namespaces: [nsA], kinds: ['ConfigMap'] };
    const b = { name: `reload-b-${nsB}`, kubeconfigFile: kubeconfig, namespaces: [nsB], kinds: ['ConfigMap'] };

    // The layout kubelet gives a ConfigMap volume: agent.yaml → ..data/agent.yaml, ..data → ..<timestamp>.
    const volume = new AtomicVolume(mkdtempSync(join(tmpdir(), 'agent-cm-')));
    const base = configText([a]);
    const publish = (text: string): void => volume.publish({ 'agent.yaml': text });
    publish(base);
    const { admin } = await startAgent(volume.path('agent.yaml'));
    await waitFor(
      'account a synced',
      async () => (await get<Readiness>(`${admin}/readyz`)).body.accounts[a.name] === 'synced',
    );

    const withB = base.replace(
      /accounts:\n[\s\S]*$/,
      stringify({ accounts: [a, b] })
        .replace(/^/gm, '  ')
        .trimEnd() + '\n',
    );
    publish(withB);
    await waitFor('account b added and synced', async () => {
      const r = await get<Readiness>(`${admin}/readyz`);
      return r.status === 200 && r.body.accounts[b.name] === 'synced' && r.body.accounts[a.name] === 'synced';
    });
    await waitFor(
      'b cached by the plugin-server',
      async () => (await server.get(`/manifests/${b.name}/${nsB}/configmap%20in-b`)).status === 200,
    );

    const onlyB = base.replace(
      /accounts:\n[\s\S]*$/,
      stringify({ accounts: [b] })
        .replace(/^/gm, '  ')
        .trimEnd() + '\n',
    );
    publish(onlyB);
    await waitFor('account a removed', async () => {
      const r = await get<Readiness>(`${admin}/readyz`);
      return r.status === 200 && !(a.name in r.body.accounts) && r.body.accounts[b.name] === 'synced';
    });
    // b was not disturbed: the reload withdrew a on the running stream (AccountsUpdate), so b's watch is the one
    // that listed once when b was added (a new stream would have started a new reflector).
    const watchesB = (await get<WatchInfo[]>(`${admin}/watches?account=${b.name}`)).body;
    expect(watchesB.length).toBe(1);
    expect(watchesB[0]?.relists).toBe(1);
    await kubectl(['create', 'configmap', 'after-reload', '-n', nsB]);
    await waitFor(
      'b still streams',
      async () => (await server.get(`/manifests/${b.name}/${nsB}/configmap%20after-reload`)).status === 200,
    );

    // A broken config changes nothing: the running one stays.
    publish('kubernetes: {accounts: [{name: broken}]}\n');
    await sleep(1500);
    const still = await get<Readiness>(`${admin}/readyz`);
    expect(still.status).toBe(200);
    expect(Object.keys(still.body.accounts)).toEqual([b.name]);
  });

  it('reconnects with backoff when the plugin-server restarts, and streams again', async () => {
    const ns = await createNamespace('agent-reconnect');
    await kubectl(['create', 'configmap', 'before', '-n', ns]);
    const account = `reconnect-${ns}`;
    const dir = mkdtempSync(join(tmpdir(), 'agent-it-'));
    writeFileSync(
      join(dir, 'agent.yaml'),
      configText([{ name: account, kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] }]),
    );
    const { agent, admin } = await startAgent(join(dir, 'agent.yaml'));
    await waitFor('ready', async () => (await get<Readiness>(`${admin}/readyz`)).status === 200);

    await server.restart();
    await waitFor('reconnected', async () => {
      const r = await get<Readiness>(`${admin}/readyz`);
      return r.status === 200 && ((await agent.metrics.reconnects.get()).values[0]?.value ?? 0) >= 1;
    });
    // The memory store forgot everything, so there were no resume points: the account was listed again.
    await waitFor(
      'relisted into the new cache',
      async () => (await server.get(`/manifests/${account}/${ns}/configmap%20before`)).status === 200,
    );
    await kubectl(['create', 'configmap', 'after', '-n', ns]);
    await waitFor(
      'new change streamed',
      async () => (await server.get(`/manifests/${account}/${ns}/configmap%20after`)).status === 200,
    );
    const metrics = await (await fetch(`${admin}/metrics`)).text();
    // Every dial after the loss counts, failed ones included (the server took a moment to come back).
    expect(metrics).toMatch(/^scale_agent_agent_reconnects_total [1-9]\d*$/m);
    expect(metrics).toMatch(/^scale_agent_agent_connected 1$/m);
    expect(metrics).toMatch(new RegExp(`^scale_agent_agent_events_sent_total\\{account="${account}"\\} \\d+$`, 'm'));
  });

  it('picks up a CRD created while it runs, without waiting for the periodic rediscovery', async () => {
    const ns = await createNamespace('agent-crd');
    const group = `${ns}.example.com`;
    const account = `crd-${ns}`;
    const dir = mkdtempSync(join(tmpdir(), 'agent-it-'));
    // Only the custom kind: until its CRD exists the account watches nothing (and is ready).
    writeFileSync(
      join(dir, 'agent.yaml'),
      configText([{ name: account, kubeconfigFile: testEnv().kubeconfig, kinds: [`Widget.${group}`] }]),
    );
    const { admin } = await startAgent(join(dir, 'agent.yaml'));
    await waitFor('ready', async () => (await get<Readiness>(`${admin}/readyz`)).status === 200);
    expect((await get<WatchInfo[]>(`${admin}/watches?account=${account}`)).body).toEqual([]);

    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify(customResourceDefinition({ group, kind: 'Widget', plural: 'widgets' })),
    });
    const watches = await waitFor('a watch on the new kind', async () => {
      const w = (await get<WatchInfo[]>(`${admin}/watches?account=${account}`)).body;
      return w.length === 1 && w[0]?.synced ? w : undefined;
    });
    expect(watches[0]).toMatchObject({ group, version: 'v1', kind: 'Widget', namespace: '' });
    await kubectl(['apply', '-n', ns, '-f', '-'], {
      input: JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Widget', metadata: { name: 'w1' }, spec: { size: 3 } }),
    });
    const cached = await waitFor('custom resource cached', async () => {
      const r = await server.get<{ manifest?: { spec?: unknown } }>(`/manifests/${account}/${ns}/Widget.${group}%20w1`);
      return r.status === 200 ? r.body : undefined;
    });
    expect(cached.manifest?.spec).toEqual({ size: 3 });

    // Deleting the CRD removes the watch again.
    await kubectl(['delete', 'crd', `widgets.${group}`]);
    await waitFor(
      'watch removed',
      async () => (await get<WatchInfo[]>(`${admin}/watches?account=${account}`)).body.length === 0,
    );
  });
});
