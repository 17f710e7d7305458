/**
 * The install kit on a real node, as a user runs it: `scale-agent synth examples/service.yaml`, the project's image
 * built from the repository's Dockerfile (tools/image/build.sh) and imported into the node, each place installed in
 * the summary's order with either form the summary gives (`kubectl apply -k` of the overlay, or `helm upgrade
 * --install` of the chart with the generated values); the plugin-server and the agent run as pods from that image.
 * The agent's target clusters are the node's own cluster, reached in-cluster through the `kubernetes` Service.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthFile } from '../../../src/compiler/index.js';
import { projectImage } from '../../infra/image.js';
import { kubeconfigYaml } from '../../infra/pki.js';
import type { RealNode } from '../../infra/real-node/index.js';
import {
  createSecret,
  expectAllReady,
  helmInstall,
  expectHelmTestsPass,
  expectDeployed,
  podStates,
  readSummary,
  startNodeWithImages,
  waitAvailable,
  waitForAccounts,
  waitForManifest,
  type RestAnswer,
} from '../../infra/real-node/install.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

describe.each([{ form: 'kubectl apply -k' }, { form: 'helm install' }])(
  'examples/service.yaml installed with $form on a real node',
  ({ form }) => {
    let node: RealNode;
    let out: string;
    const restToken = randomBytes(24).toString('hex');

    /**
     * A request to the plugin-server's REST Service as an in-cluster client makes it: from a pod of the spinnaker
     * namespace (the peers the generated NetworkPolicy admits), by the Service's DNS name, so CoreDNS, kube-proxy and
     * the Service's selector and ports are all on the path. Node's fetch in the project image is the client.
     */
    async function rest(method: string, path: string, body?: unknown): Promise<RestAnswer> {
      const script = `const r = await fetch(process.argv[1], { method: process.argv[2], headers: { authorization: 'Bearer ' + process.argv[3], 'content-type': 'application/json' }, body: process.argv[4] || undefined }); console.log(JSON.stringify({ status: r.status, body: await r.text() }));`;
      const { stdout } = await node.kubectl(
        [
          '-n',
          'spinnaker',
          'exec',
          'deployment/scale-agent-plugin-server',
          '--',
          'node',
          '--input-type=module',
          '-e',
          script,
          `http://scale-agent-plugin-server.spinnaker.svc.cluster.local:7002${path}`,
          method,
          restToken,
          body === undefined ? '' : JSON.stringify(body),
        ],
        { timeoutMs: 60_000 },
      );
      return JSON.parse(stdout.trim().split('\n').at(-1)!) as RestAnswer;
    }
    beforeAll(async () => {
      node = await startNodeWithImages([await projectImage()]);
      out = join(mkdtempSync(join(tmpdir(), 'install-')), 'service');
      await synthFile(join(ROOT, 'examples/service.yaml'), { out });
    }, 900_000);
    afterAll(async () => {
      if (node) expect(await node.stop()).toEqual([]);
    }, 180_000);

    it('runs every pod Ready from the project image, without restarts', { timeout: 400_000 }, async () => {
      // The agent's accounts are kubeconfigs in a Secret (mode `service`): both point at this cluster's API server
      // through the in-cluster Service name, as an operator's would point at their target clusters.
      const cp = node.controlPlane;
      const kubeconfig = kubeconfigYaml({
        server: 'https://kubernetes.default.svc',
        caPem: readFileSync(cp.caFile, 'utf8'),
        token: cp.adminToken,
        user: 'target',
      });
      await node.kubectl(['create', 'namespace', 'spinnaker']);
      // The Secrets the summary says the operator provides, in the plugin-server's and agent's namespace.
      const secret = (name: string, data: Record<string, string>) => createSecret(node, 'spinnaker', name, data);
      await secret('kubeconfigs', { 'prod-east': kubeconfig, staging: kubeconfig });
      // REST tokens: "<token> <name> [read|admin]" lines.
      await secret('scale-agent-rest-tokens', { tokens: `${restToken} tester admin` });
      // The example's http artifact accounts read their credentials from this one.
      await secret('artifact-credentials', {
        'team-manifests': 'deployer:not-a-real-password',
        'releases-token': 'not-a-real-token',
      });
      for (const ns of ['payments', 'web']) await node.kubectl(['create', 'namespace', ns], { allowFail: true });
      for (const place of readSummary(out).places) {
        if (form === 'helm install') await helmInstall(node, out, place);
        else await node.kubectl(['apply', '--server-side', '-k', join(out, place.kustomize)]);
      }
      await waitAvailable(node, ['spinnaker']);
      const pods = await podStates(node, 'spinnaker');
      expect(pods.length).toBeGreaterThanOrEqual(2);
      expectAllReady(pods);
    });

    it(
      'streams both accounts through the generated gRPC Service and mTLS Secrets: /credentials lists them',
      { timeout: 120_000 },
      async () => {
        await waitForAccounts(rest, ['prod-east', 'staging']);
        // The artifact accounts of the topology reached the plugin-server's config, their Secret mounted.
        const artifacts = await rest('GET', '/artifacts/credentials');
        expect(artifacts.status).toBe(200);
        expect((JSON.parse(artifacts.body) as { name: string }[]).map((a) => a.name)).toEqual([
          'embedded-artifact',
          'team-manifests',
          'releases',
        ]);
      },
    );

    it(
      'completes an Orca-shaped deploy posted to the REST Service; the object reads back through /manifests',
      { timeout: 180_000 },
      async () => {
        await expectDeployed(node, rest, { account: 'prod-east', namespace: 'payments', name: 'from-orca' });
        const m = await waitForManifest(rest, {
          account: 'prod-east',
          namespace: 'payments',
          name: 'configMap from-orca',
        });
        expect(m).toMatchObject({ account: 'prod-east', location: 'payments', manifest: { data: { k: 'v' } } });
      },
    );

    // The chart's own test (a pod from the same image asking the plugin-server's /readyz through its Service),
    // as `helm test` runs it for each release that has one.
    if (form === 'helm install') {
      it('passes helm test for every release', { timeout: 200_000 }, async () => {
        await expectHelmTestsPass(node, out);
      });
    }
  },
);
