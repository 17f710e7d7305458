import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { Agent } from '../../../src/agent/index.js';
import type { WatchInfo } from '../../../src/agent/account.js';
import { createNamespace, kubectl, testEnv } from '../../infra/index.js';
import { PluginServerProcess } from '../../infra/processes.js';
import { logger, waitFor } from './_helpers.js';

let server: PluginServerProcess;
let agent: Agent | undefined;

beforeAll(async () => {
  server = await PluginServerProcess.start({ dir: mkdtempSync(join(tmpdir(), 'agent-budget-ps-')) });
});
afterAll(async () => {
  await agent?.stop();
  await server?.stop();
});

describe('initial sync with one sync slot and a tiny send queue', () => {
  it.each(['auto', 'never'] as const)(
    'lists every kind of the account and turns ready (streamingLists: %s)',
    async (streamingLists) => {
      const ns = await createNamespace(`budget-${streamingLists}`);
      // Enough data that the 64 KiB queue fills many times over while one scope holds the only slot.
      const big = 'x'.repeat(16 * 1024);
      for (let i = 0; i < 12; i++) {
        await kubectl(['create', 'configmap', `cm-${i}`, '-n', ns, `--from-literal=data=${big}`]);
      }
      const dir = mkdtempSync(join(tmpdir(), 'agent-budget-'));
      const account = `budget-${streamingLists}-${ns}`;
      writeFileSync(
        join(dir, 'agent.yaml'),
        stringify({
          server: {
            address: server.grpcAddress,
            insecure: true,
            backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 2 },
          },
          agentId: `agent-budget-${Math.random().toString(36).slice(2, 8)}`,
          admin: { host: '127.0.0.1', port: 0 },
          queue: { maxBytes: 65536, maxBatchBytes: 4096, maxInFlightBatches: 1 },
          kubernetes: {
            maxConcurrentSyncs: 1,
            listPageSize: 2,
            streamingLists,
            accounts: [{ name: account, kubeconfigFile: testEnv().kubeconfig, namespaces: [ns] }],
          },
        }),
      );
      agent = await Agent.start({ configFile: join(dir, 'agent.yaml'), logger, watchConfig: false });
      const admin = `http://127.0.0.1:${agent.admin.address?.port}`;
      try {
        await waitFor(
          'readiness',
          async () => {
            const res = await fetch(`${admin}/readyz`);
            if (res.status === 200) return true;
            throw new Error(`${await res.text()}; watches: ${await (await fetch(`${admin}/watches`)).text()}`);
          },
          100_000,
        );
        const watches = (await (await fetch(`${admin}/watches`)).json()) as WatchInfo[];
        // An account without kinds watches the kinds Spinnaker uses (many scopes through one slot), not all of
        // them: the API server also serves Leases, EndpointSlices and PodTemplates in the namespace.
        const kinds = watches.map((w) => w.kind);
        expect(kinds).toEqual(
          expect.arrayContaining(['ConfigMap', 'Deployment', 'ReplicaSet', 'Pod', 'Service', 'Secret', 'Job']),
        );
        expect(kinds.length).toBeGreaterThan(15);
        for (const notSpinnaker of ['Lease', 'EndpointSlice', 'PodTemplate', 'Endpoints']) {
          expect(kinds).not.toContain(notSpinnaker);
        }
        expect(watches.filter((w) => !w.synced && w.state !== 'forbidden')).toEqual([]);
      } finally {
        await agent.stop();
        agent = undefined;
      }
    },
  );
});
