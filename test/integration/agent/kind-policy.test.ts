import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Agent } from '../../../src/agent/index.js';
import type { WatchInfo } from '../../../src/agent/account.js';
import { createNamespace, testEnv } from '../../infra/index.js';
import { PluginServerProcess } from '../../infra/processes.js';
import { logger, waitFor } from './_helpers.js';

/**
 * The plugin-server's kind policy (accounts.cacheKinds / cacheOmitKinds), sent to the agent in Welcome: a real
 * plugin-server process, the agent in-process, a real API server.
 */
let server: PluginServerProcess;
let agent: Agent | undefined;

beforeAll(async () => {
  server = await PluginServerProcess.start({
    dir: mkdtempSync(join(tmpdir(), 'agent-kind-policy-ps-')),
    extra: {
      accounts: { gracePeriodSeconds: 600, cacheKinds: ['ConfigMap', 'Secret', 'Service'], cacheOmitKinds: ['Secret'] },
    },
  });
});
afterAll(async () => {
  await agent?.stop();
  await server?.stop();
});

describe('the server-side kind policy', () => {
  it('replaces the default kinds of accounts without kinds, and omits kinds for every account', async () => {
    const ns = await createNamespace('kind-policy');
    const dir = mkdtempSync(join(tmpdir(), 'agent-kind-policy-'));
    const kubeconfigFile = testEnv().kubeconfig;
    writeFileSync(
      join(dir, 'agent.yaml'),
      stringify({
        server: { address: server.grpcAddress, insecure: true },
        agentId: `agent-kind-policy-${ns}`,
        admin: { host: '127.0.0.1', port: 0 },
        kubernetes: {
          accounts: [
            { name: `defaults-${ns}`, kubeconfigFile, namespaces: [ns] },
            { name: `listed-${ns}`, kubeconfigFile, namespaces: [ns], kinds: ['ConfigMap', 'Secret', 'Pod'] },
          ],
        },
      }),
    );
    agent = await Agent.start({ configFile: join(dir, 'agent.yaml'), logger, watchConfig: false });
    const admin = `http://127.0.0.1:${agent.admin.address?.port}`;
    await waitFor(
      'readiness',
      async () => {
        const res = await fetch(`${admin}/readyz`);
        if (res.status === 200) return true;
        throw new Error(await res.text());
      },
      60_000,
    );
    const watches = (await (await fetch(`${admin}/watches`)).json()) as WatchInfo[];
    const kindsOf = (account: string): string[] =>
      watches
        .filter((w) => w.account === account)
        .map((w) => w.kind)
        .sort();
    // The server's cacheKinds instead of the agent's default (no Deployments, Pods, ...), Secret omitted.
    expect(kindsOf(`defaults-${ns}`)).toEqual(['ConfigMap', 'Service']);
    // An account's own kinds stay its own, but the server's omission wins.
    expect(kindsOf(`listed-${ns}`)).toEqual(['ConfigMap', 'Pod']);
  });
});
