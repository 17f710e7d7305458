/**
 * Operations end to end: Orca-shaped requests to the real plugin-server, run by the real agent against the real
 * control plane, checked with kubectl and through the REST read API; the consistency barrier (a read right after a
 * task completes never shows the previous generation), with the memory and the MySQL store.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl } from '../infra/index.js';
import { startStack, type Stack } from '../infra/stack.js';
import { deployBody, fixture, OpsClient, type Obj } from './operations-helpers.js';

async function getJson(args: string[]): Promise<Obj> {
  const { stdout } = await kubectl(['get', ...args, '-o', 'json']);
  return JSON.parse(stdout) as Obj;
}

const deployment = (name: string, replicas: number, image = 'registry.example.com/web:1') => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image }] } },
  },
});

for (const storeType of ['memory', 'mysql'] as const) {
  describe(`operations (${storeType} store)`, () => {
    let stack: Stack;
    let ns: string;
    let ops: OpsClient;
    const account = `ops-${storeType}`;

    beforeAll(async () => {
      stack = await startStack({
        name: `ops-${storeType}`,
        store: storeType,
        agent: { accounts: [{ name: account }] },
      });
      ns = stack.ns;
      ops = new OpsClient(stack.server);
    });

    afterAll(async () => {
      await stack?.stop();
    });

    it('deploys a ConfigMap, Deployment and Service (Orca payload) with Clouddriver result objects', async () => {
      const task = await ops.run(fixture('deploy-multi-doc.json', account, ns));
      expect(task.status).toMatchObject({ completed: true, failed: false, phase: 'ORCHESTRATION' });
      expect(task.history[0]).toEqual({ phase: 'ORCHESTRATION', status: 'Initializing Orchestration Task' });
      expect(task.history.map((h) => h.status)).toContain('Processing op: KubernetesDeployManifestOperation');
      expect(task.history.at(-1)).toEqual({ phase: 'ORCHESTRATION', status: 'Orchestration completed.' });
      const [result] = task.resultObjects;
      expect(result?.manifestNamesByNamespace).toEqual({
        [ns]: ['configMap web-cfg-v000', 'service web', 'deployment web'],
      });
      expect(result?.createdArtifacts).toHaveLength(3);
      expect(result?.boundArtifacts).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ type: 'docker/image', reference: 'ghcr.io/acme/web:1.4.2' }),
        ]),
      );

      const live = await getJson(['deployment', 'web', '-n', ns]);
      expect(live.spec.template.spec.containers[0].image).toBe('ghcr.io/acme/web:1.4.2');
      expect(live.spec.template.spec.containers[0].envFrom[0].configMapRef.name).toBe('web-cfg-v000');
      // The barrier: the cache already holds what the task wrote.
      const read = await ops.manifest(account, ns, 'deployment web');
      expect(read.status).toBe(200);
      expect(read.body.manifest.metadata.resourceVersion).toBe(live.metadata.resourceVersion);
      expect((await ops.manifest(account, ns, 'configMap web-cfg-v000')).status).toBe(200);
      expect((await ops.manifest(account, ns, 'service web')).status).toBe(200);
    });

    it('barrier: after every deploy, patch and scale task the read shows the new generation (30 rounds)', async () => {
      const name = 'barrier';
      for (let i = 1; i <= 30; i++) {
        const deploy = await ops.run(
          deployBody(account, 'barrier', ns, [deployment(name, 1, `registry.example.com/web:${i}`)]),
        );
        const deployed = deploy.resultObjects[0]?.manifests[0];
        let read = await ops.manifest(account, ns, `deployment ${name}`);
        expect(read.body.manifest.metadata.generation).toBeGreaterThanOrEqual(deployed.metadata.generation);
        expect(read.body.manifest.spec.template.spec.containers[0].image).toBe(`registry.example.com/web:${i}`);

        await ops.run([
          {
            patchManifest: {
              account,
              location: ns,
              manifestName: `deployment ${name}`,
              options: { mergeStrategy: 'merge' },
              patchBody: { metadata: { labels: { round: String(i) } } },
            },
          },
        ]);
        read = await ops.manifest(account, ns, `deployment ${name}`);
        expect(read.body.manifest.metadata.labels.round).toBe(String(i));

        await ops.run([
          { scaleManifest: { account, location: ns, manifestName: `deployment ${name}`, replicas: (i % 3) + 1 } },
        ]);
        read = await ops.manifest(account, ns, `deployment ${name}`);
        expect(read.body.manifest.spec.replicas).toBe((i % 3) + 1);
      }
    });
  });
}
