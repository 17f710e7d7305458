/**
 * examples/agent.yaml and examples/infrastructure.yaml on a real node, each installed both ways the summary gives,
 * side by side on one node (the node and the images are what cost): `kubectl apply -k` of the overlays and `helm
 * upgrade --install` of the chart with the generated values, each in the summary's order.
 * - agent: the plugin-server on the memory store and two in-cluster agents (mode agent), each with its own
 *   ServiceAccount, one limited to namespace apps, one read-only cluster-wide;
 * - infrastructure: 2 plugin-server replicas on MySQL (MariaDB as a pod) and two agent groups (mode
 *   infrastructure) whose kubeconfigs `scale-agent kubeconfig` mints, one with a named context, one limited to
 *   namespace shop.
 *
 * Changes to each example: a one-node cluster has no load balancer, so the gRPC exposure is External at the gRPC
 * Service's cluster DNS name (as in install-mixed.test.ts); and the Helm form's copy has its namespaces and account
 * names suffixed `-helm`, so that the two installs share no object (ClusterRoles are named for accounts). All
 * targets are the node's own cluster. Per example and form: every pod Ready without restarts, every account of the
 * summary in /credentials, and each account reads a ConfigMap of the one namespace all of them watch through
 * /manifests; with Helm, `helm test` of every release.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthFile } from '../../../src/compiler/index.js';
import { mariadbImage, projectImage } from '../../infra/image.js';
import type { RealNode } from '../../infra/real-node/index.js';
import {
  clusterIp,
  createSecret,
  expectAllReady,
  exposeGrpcAtServiceName,
  fetchFromPod,
  helmInstall,
  expectHelmTestsPass,
  mintAccountKubeconfig,
  podStates,
  promtoolProblems,
  readSummary,
  restFromHost,
  startNodeWithImages,
  waitAvailable,
  waitForAccounts,
  waitForManifest,
  type PodState,
} from '../../infra/real-node/install.js';
import { mariadbManifests, mysqlUrl, type MariaDbInCluster } from '../../infra/real-node/mariadb.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const IN_CLUSTER_API = 'https://kubernetes.default.svc';
const AGENT = 'app.kubernetes.io/component=agent';
/** Where an agent group of mode agent or infrastructure runs when the topology does not say. */
const DEFAULT_AGENT_NAMESPACE = 'scale-agent';

/** Per example: the namespaces its accounts are limited to (they exist in a user's cluster), where every account can read the probe object, and whether it runs on MySQL. */
const EXAMPLES = [
  { example: 'agent', namespaces: ['apps'], probeNamespace: 'apps', mysql: false },
  { example: 'infrastructure', namespaces: ['shop'], probeNamespace: 'shop', mysql: true },
];

const FORMS = [
  { form: 'kubectl apply -k', suffix: '' },
  { form: 'helm install', suffix: '-helm' },
] as const;

interface Topology {
  pluginServer: { namespace: string; grpc: { exposure: unknown } };
  agents: { namespace?: string; accounts: { name: string }[] }[];
}

/** One form's install: its topology and output, the namespaces it runs in, and its REST client. */
interface Install {
  form: (typeof FORMS)[number]['form'];
  topology: string;
  out: string;
  pluginServerNamespace: string;
  agentNamespaces: string[];
  database: string;
  /** The REST Service's ClusterIP URL, once installed. */
  restBase: string;
  rest: ReturnType<typeof restFromHost>;
}

describe.each(EXAMPLES)(
  'the $example example installed with kubectl apply -k and with helm install, side by side on a real node',
  ({ example, namespaces, probeNamespace, mysql }) => {
    let node: RealNode;
    let db: MariaDbInCluster;
    const installs: Install[] = [];
    const restToken = randomBytes(24).toString('hex');

    beforeAll(async () => {
      node = await startNodeWithImages([await projectImage(), ...(mysql ? [await mariadbImage()] : [])]);
      const dir = mkdtempSync(join(tmpdir(), `install-${example}-`));
      for (const { form, suffix } of FORMS) {
        const t = parse(readFileSync(join(ROOT, 'examples', `${example}.yaml`), 'utf8')) as Topology;
        t.pluginServer.namespace += suffix;
        for (const a of t.agents) {
          a.namespace = `${a.namespace ?? DEFAULT_AGENT_NAMESPACE}${suffix}`;
          for (const acc of a.accounts) acc.name += suffix;
        }
        exposeGrpcAtServiceName(t);
        const formDir = join(dir, form.split(' ')[0]!);
        mkdirSync(formDir);
        const topology = join(formDir, 'topology.yaml');
        writeFileSync(topology, stringify(t));
        const out = join(formDir, 'out');
        await synthFile(topology, { out });
        const i: Install = {
          form,
          topology,
          out,
          pluginServerNamespace: t.pluginServer.namespace,
          agentNamespaces: [...new Set(t.agents.map((a) => a.namespace!))],
          database: `scale_agent${suffix.replace(/\W/g, '_')}`,
          restBase: '',
          rest: restFromHost(restToken, () => i.restBase),
        };
        installs.push(i);
      }
    }, 900_000);
    afterAll(async () => {
      if (node) expect(await node.stop()).toEqual([]);
    }, 180_000);

    /** What the operator does for one form: the Secrets the summary asks for, then each place in its order. */
    async function install(i: Install): Promise<void> {
      const ns = i.pluginServerNamespace;
      await node.kubectl(['create', 'namespace', ns]);
      // Helm creates a release's namespace only when it installs it; the kubeconfig Secrets are there before.
      if (i.form === 'helm install') {
        for (const a of i.agentNamespaces) await node.kubectl(['create', 'namespace', a]);
      }
      if (mysql) await createSecret(node, ns, 'scale-agent-mysql', { url: mysqlUrl(db, i.database) });
      await createSecret(node, ns, 'scale-agent-rest-tokens', { tokens: `${restToken} tester admin` });
      for (const place of readSummary(i.out).places) {
        if (i.form === 'helm install') await helmInstall(node, i.out, place);
        else await node.kubectl(['apply', '--server-side', '-k', join(i.out, place.kustomize)]);
        if (place.kind === 'account-rbac') {
          const account = place.name.slice('account-'.length);
          await mintAccountKubeconfig(node, {
            topology: i.topology,
            account,
            dir: join(i.out, '..'),
            server: IN_CLUSTER_API,
          });
        }
      }
      await waitAvailable(node, [ns, ...i.agentNamespaces]);
      i.restBase = `http://${await clusterIp(node, ns, 'scale-agent-plugin-server')}:7002`;
    }

    async function podsOf(i: Install): Promise<PodState[]> {
      const pods: PodState[] = [];
      for (const ns of [i.pluginServerNamespace, ...i.agentNamespaces]) pods.push(...(await podStates(node, ns)));
      return pods;
    }

    it(
      'runs every pod of both installs Ready from the project image, without restarts',
      { timeout: 600_000 },
      async () => {
        for (const ns of namespaces) await node.kubectl(['create', 'namespace', ns]);
        if (mysql) {
          db = {
            namespace: 'mariadb',
            database: installs[0]!.database,
            moreDatabases: installs.slice(1).map((i) => i.database),
            user: 'scale_agent',
            password: randomBytes(12).toString('hex'),
          };
          await node.kubectl(['apply', '-f', '-'], { input: JSON.stringify(mariadbManifests(db)) });
          await waitAvailable(node, ['mariadb']);
        }
        await Promise.all(installs.map((i) => install(i)));
        for (const i of installs) {
          const pods = await podsOf(i);
          const agentGroups = new Set(readSummary(i.out).accounts.map((a) => a.agent));
          expect({
            form: i.form,
            agents: pods.filter((p) => p.labels['app.kubernetes.io/component'] === 'agent').length,
          }).toEqual({ form: i.form, agents: agentGroups.size });
          expectAllReady(pods);
        }
        if (mysql) expectAllReady(await podStates(node, 'mariadb'));
      },
    );

    it.each(FORMS)(
      '$form: registers every account of the summary, and each reads what it may see',
      { timeout: 180_000 },
      async ({ form }) => {
        const i = installs.find((x) => x.form === form)!;
        const want = readSummary(i.out).accounts.map((a) => a.name);
        await waitForAccounts(i.rest, want);
        // An object in the one namespace every account of the example watches (both forms' accounts read it).
        await node.kubectl(['-n', probeNamespace, 'apply', '-f', '-'], {
          input: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe' }, data: { k: 'v' } }),
        });
        for (const account of want) {
          const read = await waitForManifest(i.rest, { account, namespace: probeNamespace, name: 'configMap probe' });
          expect(read).toMatchObject({ account, location: probeNamespace, manifest: { data: { k: 'v' } } });
        }
        expectAllReady(await podsOf(i));
      },
    );

    it.each(FORMS)(
      "$form: serves each agent's /metrics through its metrics Service to a pod of its namespace, as promtool parses it",
      { timeout: 180_000 },
      async ({ form }) => {
        const i = installs.find((x) => x.form === form)!;
        const groups = new Set(readSummary(i.out).accounts.map((a) => a.agent));
        const scraped: string[] = [];
        for (const ns of i.agentNamespaces) {
          const services = (
            await node.kubectl(['-n', ns, 'get', 'services', '-l', AGENT, '-o', 'jsonpath={.items[*].metadata.name}'])
          ).stdout
            .split(' ')
            .filter(Boolean);
          // Any pod of the namespace (where the NetworkPolicy admits the scrape from) asks: an agent's, which has node.
          const [from] = await podStates(node, ns, AGENT);
          for (const service of services) {
            const url = `http://${service}.${ns}.svc.cluster.local:8081/metrics`;
            const r = await fetchFromPod(node, { namespace: ns, pod: from!.pod }, url);
            expect({ url, status: r.status }).toEqual({ url, status: 200 });
            expect(r.body).toMatch(/^scale_agent_/m);
            expect({ url, ...(await promtoolProblems(r.body)) }).toEqual({ url, parsed: true, problems: [] });
            scraped.push(service);
          }
        }
        // One Service per agent group, named as its Deployment.
        expect(scraped.sort()).toEqual([...groups].map((g) => `scale-agent-agent-${g}`).sort());
      },
    );

    // The chart's own test (a pod from the same image asking the plugin-server's /readyz through its Service).
    it('helm install: passes helm test for every release', { timeout: 300_000 }, async () => {
      await expectHelmTestsPass(node, installs.find((x) => x.form === 'helm install')!.out);
    });
  },
);
