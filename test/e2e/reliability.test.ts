/**
 * Faults end to end: kill the agent mid-stream (it resumes from the server's resume points, no relist), restart
 * the plugin-server on MySQL (the agent reconnects, the cache converges), compact etcd so the resume point is
 * gone (410 Gone, clean relist that also sweeps what was deleted meanwhile). After each, the cache checker shows
 * the cache equals the API server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch, type CacheCheckOptions, type CheckedKind } from '../infra/cache-checker.js';
import { ControlPlane, kubectl, run } from '../infra/index.js';
import { configMapList } from '../infra/manifests.js';
import { AgentProcess, PluginServerProcess } from '../infra/processes.js';
import { startStack } from '../infra/stack.js';

const SYNC_STARTS = 'scale_agent_plugin_server_messages_received_total{type="syncStart"}';

const CONFIG_MAPS_AND_SECRETS: CheckedKind[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', namespaced: true },
  { apiVersion: 'v1', kind: 'Secret', namespaced: true },
];

/** A stack with one agent account that caches the stack namespace's ConfigMaps and Secrets. */
const withAccount = (name: string, account: string, store: 'memory' | 'mysql') =>
  startStack({ name, store, agent: { accounts: [{ name: account, kinds: ['ConfigMap', 'Secret'] }] } });

describe('reliability end to end', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('agent killed mid-stream resumes without a full relist; the cache equals the API server', async () => {
    const stack = await withAccount('kill-agent', 'resume', 'memory');
    cleanups.push(() => stack.stop());
    const { ns, server, agent } = stack;
    const checked = stack.cacheCheck('resume', { kinds: CONFIG_MAPS_AND_SECRETS });
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'before', 0, 50) });
    await waitForCacheToMatch(checked);
    const syncsBefore = await server.metric(SYNC_STARTS);
    expect(syncsBefore).toBeGreaterThan(0);

    // Churn while the agent dies without a goodbye, and while it is down.
    const churn = kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'during', 0, 100) });
    await agent.kill();
    await churn;
    await kubectl(['delete', 'configmap', 'before-0', 'before-1', '-n', ns]);
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'after', 0, 20) });

    await agent.restart();
    await waitForCacheToMatch(checked);
    // Resumed from the server's resume points: not one scope was listed again.
    expect(await server.metric(SYNC_STARTS)).toBe(syncsBefore);
    expect((await server.get('/armory/accounts/resume')).body).toMatchObject({ state: 'ACTIVE' });
  });

  it('plugin-server restarted on MySQL: the agent reconnects and the cache converges', async () => {
    const stack = await withAccount('ps-restart', 'durable', 'mysql');
    cleanups.push(() => stack.stop());
    const { ns, server } = stack;
    const checked = stack.cacheCheck('durable', { kinds: CONFIG_MAPS_AND_SECRETS });
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'a', 0, 40) });
    await waitForCacheToMatch(checked);

    await server.kill();
    await kubectl(['apply', '-f', '-'], { input: configMapList(ns, 'b', 0, 40) });
    await kubectl(['delete', 'configmap', 'a-0', 'a-1', 'a-2', '-n', ns]);
    await server.restart();
    // The restarted server knows the account from MySQL before the agent is back (ORPHANED, cache served).
    await waitForCacheToMatch(checked);
    expect((await server.get('/armory/accounts/durable')).body).toMatchObject({ state: 'ACTIVE' });
    // The resume points survived in MySQL: the new server process saw no relist.
    expect(await server.metric(SYNC_STARTS)).toBe(0);
  });

  it('after etcd compaction the watch gets 410 Gone and relists cleanly', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-agent-e2e-410-'));
    const cp = await ControlPlane.start({ dir: join(dir, 'cp') });
    cleanups.push(() => cp.stop());
    const kubectlCp = (args: string[], input?: string) =>
      run(join(cp.binDir, 'kubectl'), ['--kubeconfig', cp.kubeconfig, ...args], { input, env: { HOME: dir } });
    await kubectlCp(['create', 'namespace', 'compact']);
    const server = await PluginServerProcess.start({ dir });
    cleanups.push(() => server.stop());
    const spec = { name: 'compacted', kubeconfigFile: cp.kubeconfig, namespaces: ['compact'], kinds: ['ConfigMap'] };
    const agent = await AgentProcess.start({ dir, serverAddress: server.grpcAddress, accounts: [spec] });
    cleanups.push(() => agent.stop());
    await kubectlCp(['apply', '-f', '-'], configMapList('compact', 'x', 0, 30));
    const opts: CacheCheckOptions = {
      httpBase: server.httpBase,
      account: 'compacted',
      kubeconfig: cp.kubeconfig,
      namespaces: ['compact'],
      kinds: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaced: true }],
    };
    await waitForCacheToMatch(opts);
    const syncsBefore = await server.metric(SYNC_STARTS);

    await agent.stop();
    await kubectlCp(['delete', 'configmap', 'x-0', 'x-1', 'x-2', 'x-3', '-n', 'compact']);
    await kubectlCp(['apply', '-f', '-'], configMapList('compact', 'y', 0, 10));
    // Compact etcd at its current revision: every resourceVersion the server holds is now too old to watch from.
    const range = await fetch(`${cp.etcdUrl}/v3/kv/range`, {
      method: 'POST',
      body: JSON.stringify({ key: Buffer.from('/').toString('base64') }),
    });
    const revision = ((await range.json()) as { header: { revision: string } }).header.revision;
    const compact = await fetch(`${cp.etcdUrl}/v3/kv/compaction`, {
      method: 'POST',
      body: JSON.stringify({ revision, physical: true }),
    });
    expect(compact.status).toBe(200);
    // kube-apiserver's watch cache would still serve the old revisions from memory; a restart rebuilds it from
    // the compacted etcd, so a watch from the old resourceVersion now gets 410 Gone.
    await cp.restart('kube-apiserver');

    await agent.restart();
    await waitForCacheToMatch(opts);
    // The deleted objects were swept by the relist's mark-and-sweep.
    expect((await server.get(`/manifests/compacted/compact/configMap%20x-0`)).status).toBe(404);
    expect(await server.metric(SYNC_STARTS)).toBeGreaterThan(syncsBefore);
  });
});
