/**
 * End to end with both stores: the real agent and plugin-server as processes, the real control plane. Every
 * change made through the API server becomes visible through GET /manifests and disappears after delete; Secret
 * data never reaches the plugin-server; the cache equals the API server afterwards.
 */
import { readFileSync } from 'node:fs';
import { createConnection } from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl } from '../infra/index.js';
import { customResourceDefinition } from '../infra/manifests.js';
import type { AgentProcess, PluginServerProcess } from '../infra/processes.js';
import { startStack, type Stack } from '../infra/stack.js';
import { eventually } from '../unit/plugin-server/helpers.js';

const CANARY = `canary-${Math.random().toString(36).slice(2)}-do-not-leak`;

async function apply(doc: object): Promise<void> {
  await kubectl(['apply', '-f', '-'], { input: JSON.stringify(doc) });
}

for (const storeType of ['memory', 'mysql'] as const) {
  describe(`live cache end to end (${storeType} store)`, () => {
    let stack: Stack;
    let ns: string;
    let server: PluginServerProcess;
    let agent: AgentProcess;
    const account = `e2e-${storeType}`;
    const group = `e2e${Math.random().toString(36).slice(2, 8)}.example.com`;

    beforeAll(async () => {
      stack = await startStack({
        name: `live-${storeType}`,
        store: storeType,
        agent: {
          accounts: [{ name: account, kinds: ['Deployment', 'ReplicaSet', 'ConfigMap', 'Secret', `CronTab.${group}`] }],
        },
      });
      ({ ns, server, agent } = stack);
      stack.defer(() => kubectl(['delete', 'crd', `crontabs.${group}`, '--wait=false'], { allowFail: true }));
    });

    afterAll(async () => {
      await stack?.stop();
    });

    const manifest = (location: string, name: string) =>
      server.get<Record<string, unknown>>(`/manifests/${account}/${location}/${encodeURIComponent(name)}`);
    const until = <T>(fn: () => Promise<T>, ok: (v: T) => boolean) => eventually(fn, ok, 30_000);

    it('Deployments appear with Clouddriver status, follow updates and disappear after delete', async () => {
      const deployment = (replicas: number) => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'web', namespace: ns, annotations: { 'moniker.spinnaker.io/application': 'shop' } },
        spec: {
          replicas,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'registry.example.com/web:1.0' }] },
          },
        },
      });
      await apply(deployment(0));
      const zero = await until(
        () => manifest(ns, 'deployment web'),
        (r) => r.status === 200 && (r.body.status as { stable: { state: boolean } }).stable.state,
      );
      expect(zero.body).toMatchObject({
        account,
        name: 'deployment web',
        location: ns,
        moniker: { app: 'shop' },
        status: {
          stable: { state: true },
          paused: { state: false },
          available: { state: true },
          failed: { state: false },
        },
        artifacts: [
          { type: 'docker/image', name: 'registry.example.com/web', reference: 'registry.example.com/web:1.0' },
        ],
      });

      // No kubelet runs here, so two replicas never become available: Clouddriver says "unstable".
      await apply(deployment(2));
      const two = await until(
        () => manifest(ns, 'deployment web'),
        (r) =>
          (r.body.manifest as { spec: { replicas: number } } | undefined)?.spec.replicas === 2 &&
          (r.body.status as { stable: { message?: string } }).stable.message ===
            'Waiting for all replicas to be available',
      );
      expect(two.body.status).toMatchObject({ stable: { state: false }, failed: { state: false } });
      // The ReplicaSet the controller made is cached too.
      const rsName = await until(
        async () => (await server.get<{ name: string }[]>(`/admin/cache/${account}?kind=ReplicaSet`)).body,
        (l) => l.length > 0,
      );
      expect((await manifest(ns, `replicaSet ${rsName[0]!.name}`)).status).toBe(200);

      await kubectl(['delete', 'deployment', 'web', '-n', ns]);
      await until(
        () => manifest(ns, 'deployment web'),
        (r) => r.status === 404,
      );
    });

    it('ConfigMaps: create, update, delete', async () => {
      await apply({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings', namespace: ns },
        data: { level: 'one' },
      });
      await until(
        () => manifest(ns, 'configMap settings'),
        (r) => r.status === 200,
      );
      await apply({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings', namespace: ns },
        data: { level: 'two' },
      });
      await until(
        () => manifest(ns, 'cm settings'),
        (r) => (r.body.manifest as { data?: { level: string } } | undefined)?.data?.level === 'two',
      );
      await kubectl(['delete', 'configmap', 'settings', '-n', ns]);
      await until(
        () => manifest(ns, 'configMap settings'),
        (r) => r.status === 404,
      );
    });

    it('Secrets are cached as metadata only: the canary never reaches the plugin-server', async () => {
      await apply({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'creds', namespace: ns, labels: { team: 'payments' } },
        stringData: { password: CANARY },
      });
      const got = await until(
        () => manifest(ns, 'secret creds'),
        (r) => r.status === 200,
      );
      expect(got.body).toMatchObject({
        name: 'secret creds',
        manifest: { kind: 'Secret', metadata: { labels: { team: 'payments' } } },
      });
      const encoded = Buffer.from(CANARY).toString('base64');
      for (const path of [
        `/manifests/${account}/${ns}/secret%20creds`,
        `/admin/cache/${account}`,
        '/credentials?expand=true',
        '/armory/accounts',
      ]) {
        const text = await (await fetch(server.httpBase + path)).text();
        expect(text).not.toContain(CANARY);
        expect(text).not.toContain(encoded);
      }
      if (stack.storage.type === 'mysql') {
        const conn = await createConnection(stack.storage.url);
        try {
          const [rows] = await conn.query('SELECT object_json FROM sa_objects');
          const dump = JSON.stringify(rows);
          expect(dump).toContain('creds');
          expect(dump).not.toContain(CANARY);
          expect(dump).not.toContain(encoded);
        } finally {
          await conn.end();
        }
      }
      for (const log of [server.logFile, agent.logFile]) {
        const text = readFileSync(log, 'utf8');
        expect(text).not.toContain(CANARY);
        expect(text).not.toContain(encoded);
      }
    });

    it('a CRD created mid-test: its custom resources are cached', async () => {
      await apply(customResourceDefinition({ group, kind: 'CronTab', plural: 'crontabs' }));
      await kubectl(['wait', '--for=condition=Established', `crd/crontabs.${group}`, '--timeout=30s']);
      // kubectl's discovery cache may lag the new CRD for a moment; retry the apply until the type is served.
      await until(
        () =>
          kubectl(['apply', '-f', '-'], {
            allowFail: true,
            input: JSON.stringify({
              apiVersion: `${group}/v1`,
              kind: 'CronTab',
              metadata: { name: 'nightly', namespace: ns },
              spec: { schedule: '0 3 * * *' },
            }),
          }),
        (r) => r.code === 0,
      );
      const cr = await until(
        () => manifest(ns, `crontab.${group} nightly`),
        (r) => r.status === 200,
      );
      expect(cr.body).toMatchObject({
        name: `CronTab.${group} nightly`,
        manifest: { spec: { schedule: '0 3 * * *' } },
        status: { stable: { state: true } },
      });
      await kubectl(['delete', `crontabs.${group}`, 'nightly', '-n', ns]);
      await until(
        () => manifest(ns, `crontab.${group} nightly`),
        (r) => r.status === 404,
      );
    });

    it('the cache equals the API server', async () => {
      await apply({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'final', namespace: ns },
        data: { a: 'b' },
      });
      const diff = await waitForCacheToMatch(
        stack.cacheCheck(account, {
          kinds: [
            { apiVersion: 'apps/v1', kind: 'Deployment', namespaced: true },
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', namespaced: true },
            { apiVersion: 'v1', kind: 'ConfigMap', namespaced: true },
            { apiVersion: 'v1', kind: 'Secret', namespaced: true },
          ],
        }),
      );
      expect(diff.compared).toBeGreaterThan(0);
    });
  });
}
