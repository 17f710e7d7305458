/**
 * Armory's local overlay pattern with a real plugin-server and kube-apiserver: the base config in one ConfigMap
 * volume, accounts in a second file (`armory-agent-local.yaml`, in its own Secret volume), both watched. Changes to
 * the overlay add and change accounts without a restart; a broken overlay leaves the running config in place.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Agent } from '../../../src/agent/index.js';
import { AtomicVolume } from '../../infra/atomic-volume.js';
import { createNamespace, kubectl, testEnv } from '../../infra/index.js';
import { PluginServerProcess } from '../../infra/processes.js';
import { logger, waitFor } from './_helpers.js';

let server: PluginServerProcess;
let agent: Agent | undefined;

beforeAll(async () => {
  server = await PluginServerProcess.start({ dir: mkdtempSync(join(tmpdir(), 'overlay-it-ps-')) });
});
afterAll(async () => {
  await agent?.stop();
  await server?.stop();
});

async function readiness(admin: string): Promise<{ status: number; accounts: Record<string, string> }> {
  const res = await fetch(`${admin}/readyz`);
  return { status: res.status, accounts: ((await res.json()) as { accounts: Record<string, string> }).accounts };
}

describe('config overlays', () => {
  it('merges armory-agent-local.yaml over the base, accounts by name, and follows changes to the overlay', async () => {
    const [nsA, nsB, nsC] = [
      await createNamespace('overlay-a'),
      await createNamespace('overlay-b'),
      await createNamespace('overlay-c'),
    ];
    for (const ns of [nsA, nsB, nsC]) await kubectl(['create', 'configmap', 'here', '-n', ns]);
    const kubeconfig = testEnv().kubeconfig;
    const account = (name: string, ns: string) => ({
      name,
      kubeconfigFile: kubeconfig,
      namespaces: [ns],
      kinds: ['ConfigMap'],
    });
    const a = `a-${nsA}`;
    const b = `b-${nsB}`;

    const config = new AtomicVolume(mkdtempSync(join(tmpdir(), 'overlay-config-')));
    const local = new AtomicVolume(mkdtempSync(join(tmpdir(), 'overlay-local-')));
    config.publish({
      'armory-agent.yml': stringify({
        server: { address: server.grpcAddress, insecure: true, backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 2 } },
        agentId: `overlay-it-${nsA}`,
        admin: { host: '127.0.0.1', port: 0 },
        kubernetes: { accounts: [account(a, nsA)] },
      }),
    });
    local.publish({ 'armory-agent-local.yaml': '# accounts come later\n' });
    agent = await Agent.start({
      configFile: [config.path('armory-agent.yml'), local.path('armory-agent-local.yaml')],
      logger,
      configPollMs: 1000,
    });
    const admin = `http://127.0.0.1:${agent.admin.address?.port}`;
    await waitFor('a synced', async () => (await readiness(admin)).accounts[a] === 'synced');

    // An account added by the overlay alone.
    local.publish({ 'armory-agent-local.yaml': stringify({ kubernetes: { accounts: [account(b, nsB)] } }) });
    await waitFor('b from the overlay synced', async () => {
      const r = await readiness(admin);
      return r.accounts[b] === 'synced' && r.accounts[a] === 'synced';
    });
    await waitFor('b cached', async () => (await server.get(`/manifests/${b}/${nsB}/configmap%20here`)).status === 200);

    // The overlay redefines a (same name): its definition replaces the base's; b stays.
    local.publish({
      'armory-agent-local.yaml': stringify({ kubernetes: { accounts: [account(b, nsB), account(a, nsC)] } }),
    });
    await waitFor(
      'a redefined by the overlay',
      () =>
        agent?.config.kubernetes.accounts.length === 2 &&
        agent.config.kubernetes.accounts.find((x) => x.name === a)?.namespaces[0] === nsC,
    );
    expect(agent.config.kubernetes.accounts.map((x) => [x.name, x.namespaces])).toEqual([
      [a, [nsC]],
      [b, [nsB]],
    ]);
    // Its watch moved to nsC (the plugin-server's /manifests may read live, so the agent's watches are asked).
    const watches = await waitFor('a watches nsC, synced', async () => {
      const w = (await (await fetch(`${admin}/watches?account=${a}`)).json()) as {
        namespace: string;
        synced: boolean;
      }[];
      return w.length === 1 && w[0]?.namespace === nsC && w[0].synced ? w : undefined;
    });
    expect(watches).toHaveLength(1);

    // A broken overlay is refused as a whole: the running accounts stay as they were.
    local.publish({ 'armory-agent-local.yaml': 'kubernetes: {accounts: [{name: broken}]}\n' });
    await sleep(1500);
    expect(Object.keys((await readiness(admin)).accounts).sort()).toEqual([a, b].sort());
    expect(agent.config.kubernetes.accounts.find((x) => x.name === a)?.namespaces).toEqual([nsC]);
  });
});
