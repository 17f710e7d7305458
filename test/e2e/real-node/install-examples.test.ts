/**
 * examples/agent.yaml and examples/infrastructure.yaml on a real node, each installed with `kubectl apply -k` in the
 * summary's order (the chart form of the same projections runs in install.test.ts and install-mixed.test.ts):
 * - agent: the plugin-server on the memory store and two in-cluster agents (mode agent), each with its own
 *   ServiceAccount, one limited to namespace apps, one read-only cluster-wide;
 * - infrastructure: 2 plugin-server replicas on MySQL (MariaDB as a pod) and two agent groups (mode
 *   infrastructure) whose kubeconfigs `scale-agent kubeconfig` mints, one with a named context, one limited to
 *   namespace shop.
 *
 * One change to each example, as in install-mixed.test.ts: a one-node cluster has no load balancer, so the gRPC
 * exposure is External at the gRPC Service's cluster DNS name. All targets are the node's own cluster. Per example:
 * every pod Ready without restarts, every account of the summary in /credentials, and each account reads an object
 * it is allowed to see through /manifests.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthFile } from '../../../src/compiler/index.js';
import { mariadbImage, projectImage } from '../../infra/image.js';
import { RealNode } from '../../infra/real-node/index.js';
import {
  clusterIp,
  expectAllReady,
  mintAccountKubeconfig,
  podStates,
  readSummary,
  waitAvailable,
  type RestAnswer,
} from '../../infra/real-node/install.js';
import { mariadbManifests, mysqlUrl } from '../../infra/real-node/mariadb.js';
import { waitFor } from '../../infra/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const GRPC_ADDRESS = 'scale-agent-plugin-server-grpc.spinnaker.svc.cluster.local:9091';
const IN_CLUSTER_API = 'https://kubernetes.default.svc';

/** Per example: the namespaces its accounts are limited to (they exist in a user's cluster), where every account can read the probe object, and whether it runs on MySQL. */
const EXAMPLES = [
  { example: 'agent', namespaces: ['apps'], probeNamespace: 'apps', mysql: false },
  { example: 'infrastructure', namespaces: ['shop'], probeNamespace: 'shop', mysql: true },
];

describe.each(EXAMPLES)(
  'the $example example installed with kubectl apply -k on a real node',
  ({ example, namespaces, probeNamespace, mysql }) => {
    let node: RealNode;
    let dir: string;
    let topology: string;
    let out: string;
    let restBase: string;
    const restToken = randomBytes(24).toString('hex');

    async function rest(method: string, path: string): Promise<RestAnswer> {
      const r = await fetch(`${restBase}${path}`, {
        method,
        headers: { authorization: `Bearer ${restToken}` },
        signal: AbortSignal.timeout(30_000),
      });
      return { status: r.status, body: await r.text() };
    }

    beforeAll(async () => {
      node = await RealNode.start({ log: (l) => console.error(`[real-node] ${l}`) });
      for (const image of [await projectImage(), ...(mysql ? [await mariadbImage()] : [])]) {
        await node.ctr(['--namespace', 'k8s.io', 'images', 'import', image.archive], { timeoutMs: 300_000 });
      }
      dir = mkdtempSync(join(tmpdir(), `install-${example}-`));
      const t = parse(readFileSync(join(ROOT, 'examples', `${example}.yaml`), 'utf8')) as {
        pluginServer: { grpc: { exposure: unknown } };
      };
      t.pluginServer.grpc.exposure = { type: 'External', address: GRPC_ADDRESS };
      topology = join(dir, 'topology.yaml');
      writeFileSync(topology, stringify(t));
      out = join(dir, 'out');
      await synthFile(topology, { out });
    }, 900_000);
    afterAll(async () => {
      if (node) expect(await node.stop()).toEqual([]);
    }, 180_000);

    it('runs every pod Ready from the project image, without restarts', { timeout: 600_000 }, async () => {
      for (const ns of ['spinnaker', ...namespaces]) await node.kubectl(['create', 'namespace', ns]);
      const secret = (name: string, data: Record<string, string>) =>
        node.kubectl([
          '-n',
          'spinnaker',
          'create',
          'secret',
          'generic',
          name,
          ...Object.entries(data).map(([k, v]) => `--from-literal=${k}=${v}`),
        ]);
      if (mysql) {
        const db = {
          namespace: 'mariadb',
          database: 'scale_agent',
          user: 'scale_agent',
          password: randomBytes(12).toString('hex'),
        };
        await node.kubectl(['apply', '-f', '-'], { input: JSON.stringify(mariadbManifests(db)) });
        await secret('scale-agent-mysql', { url: mysqlUrl(db) });
        await waitAvailable(node, ['mariadb']);
      }
      await secret('scale-agent-rest-tokens', { tokens: `${restToken} tester admin` });
      for (const place of readSummary(out).places) {
        await node.kubectl(['apply', '--server-side', '-k', join(out, place.kustomize)]);
        if (place.kind === 'account-rbac') {
          const account = place.name.slice('account-'.length);
          await mintAccountKubeconfig(node, { topology, account, dir, server: IN_CLUSTER_API });
        }
      }
      await waitAvailable(node, ['spinnaker', 'scale-agent']);
      restBase = `http://${await clusterIp(node, 'spinnaker', 'scale-agent-plugin-server')}:7002`;
      const pods = [
        ...(await podStates(node, 'spinnaker')),
        ...(await podStates(node, 'scale-agent')),
        ...(mysql ? await podStates(node, 'mariadb') : []),
      ];
      const agentGroups = new Set(readSummary(out).accounts.map((a) => a.agent));
      expect(pods.filter((p) => p.labels['app.kubernetes.io/component'] === 'agent')).toHaveLength(agentGroups.size);
      expectAllReady(pods);
    });

    it('registers every account of the summary, and each reads what it may see', { timeout: 180_000 }, async () => {
      const want = readSummary(out)
        .accounts.map((a) => a.name)
        .sort();
      await waitFor(
        `accounts ${want.join(', ')} in /credentials`,
        async () => {
          const r = await rest('GET', '/credentials');
          return (
            r.status === 200 &&
            (JSON.parse(r.body) as { name: string }[])
              .map((a) => a.name)
              .sort()
              .join() === want.join()
          );
        },
        90_000,
      );
      // An object in the one namespace every account of the example watches.
      await node.kubectl(['-n', probeNamespace, 'create', 'configmap', 'probe', '--from-literal=k=v']);
      for (const account of want) {
        const read = await waitFor(
          `configMap probe through ${account}`,
          async () => {
            const r = await rest(
              'GET',
              `/manifests/${account}/${probeNamespace}/${encodeURIComponent('configMap probe')}`,
            );
            return r.status === 200 ? r : undefined;
          },
          60_000,
        );
        expect(JSON.parse(read.body)).toMatchObject({
          account,
          location: probeNamespace,
          manifest: { data: { k: 'v' } },
        });
      }
      expectAllReady([...(await podStates(node, 'spinnaker')), ...(await podStates(node, 'scale-agent'))]);
    });
  },
);
