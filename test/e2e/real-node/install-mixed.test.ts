/**
 * examples/mixed.yaml on a real node, installed in the summary's order with `kubectl apply -k` of the overlays and
 * (on a fresh node) with `helm upgrade --install` of the chart and the generated values: the plugin-server
 * with 2 replicas on MySQL (MariaDB as a pod of the cluster, its image built like the project's), and the
 * example's three agent groups as pods from the project's image: `core` (mode service) and `remote` (mode
 * infrastructure) with kubeconfigs minted by `scale-agent kubeconfig` (a TokenRequest for the account's own
 * ServiceAccount, not the admin's token), `edge` (mode agent) with its own ServiceAccount.
 *
 * One change to the example, because a one-node cluster has no load balancer: exposure External at the gRPC
 * Service's cluster DNS name, so the agents of modes infrastructure and agent dial the Service (an operator's
 * proxy in front of it would be that address). All targets are the node's own cluster.
 *
 * One install per form carries every check (the install is what costs: about two minutes): both replicas answer,
 * an operation forwarded between them with synth's peer secret (and /internal/* refused to everyone else), a dynamic
 * account with kubeconfigContents sealed with synth's key and served by the agent pod, the ServiceAccount's RBAC,
 * /metrics, a replica and an agent deleted under churn, and a changed topology applied again, each with the cache
 * checker; with Helm, `helm test` of every release.
 */
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthFile } from '../../../src/compiler/index.js';
import { waitForCacheToMatch, type CacheCheckOptions } from '../../infra/cache-checker.js';
import { mariadbImage, projectImage } from '../../infra/image.js';
import type { RealNode } from '../../infra/real-node/index.js';
import {
  clusterIp,
  createSecret,
  credentialNames,
  expectAllReady,
  settledPods,
  exposeGrpcAtServiceName,
  helmInstall,
  expectHelmTestsPass,
  mintAccountKubeconfig,
  expectDeployed,
  podStates,
  promtoolProblems,
  readSummary,
  restFromHost,
  startNodeWithImages,
  waitAvailable,
  waitForAccounts,
  waitForManifest,
  waitRolledOut,
  type PodState,
  type RestCall,
} from '../../infra/real-node/install.js';
import { mariadbManifests, mysqlUrl } from '../../infra/real-node/mariadb.js';
import { waitFor } from '../../infra/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
/** The API server as pods reach it: the `kubernetes` Service. */
const IN_CLUSTER_API = 'https://kubernetes.default.svc';
const PLUGIN_SERVER = 'app.kubernetes.io/component=plugin-server';
const CONFIGMAPS = [{ apiVersion: 'v1', kind: 'ConfigMap', namespaced: true }];

describe.each([{ form: 'kubectl apply -k' }, { form: 'helm install' }])(
  'examples/mixed.yaml installed with $form on a real node, on MySQL with 2 replicas',
  ({ form }) => {
    let node: RealNode;
    let dir: string;
    let topology: string;
    let out: string;
    let restBase: string;
    const restToken = randomBytes(24).toString('hex');
    const auth = { authorization: `Bearer ${restToken}` };

    const rest = restFromHost(restToken, () => restBase);
    /** REST calls to one replica, by its pod IP. */
    const at =
      (base: string): RestCall =>
      (method, path, body) =>
        rest(method, path, body, base);

    const cacheOf = (account: string): CacheCheckOptions => ({
      httpBase: restBase,
      account,
      kubeconfig: node.kubeconfig,
      kinds: CONFIGMAPS,
      namespaces: ['ops'],
      headers: auth,
    });

    /** Every plugin-server, agent and MariaDB pod Running and Ready; restarts are returned for the caller to judge. */
    async function allPods(): Promise<PodState[]> {
      return [
        ...(await podStates(node, 'spinnaker')),
        ...(await podStates(node, 'scale-agent')),
        ...(await podStates(node, 'mariadb')),
      ];
    }

    /**
     * ConfigMaps created, updated and deleted in namespace ops (the `ops` account's) by the admin, as fast as the API server takes them, until stopped: what the cache must not lose while pods go away.
     */
    function churn(tag: string): { writes: () => number; stop: () => Promise<number> } {
      const kc = new KubeConfig();
      kc.loadFromFile(node.kubeconfig);
      const api = KubernetesObjectApi.makeApiClient(kc);
      let running = true;
      let writes = 0;
      const loop = (async () => {
        for (let i = 0; running; i++) {
          const name = `churn-${tag}-${i % 25}`;
          const obj = {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name, namespace: 'ops' },
            data: { i: `${i}` },
          };
          try {
            if (i % 7 === 6) await api.delete(obj);
            else if (i < 25) await api.create(obj);
            else await api.patch(obj, undefined, undefined, 'churn', true, 'application/apply-patch+yaml');
            writes++;
          } catch {
            // A deleted name written again, or created twice: the next round puts it back; only writes that
            // happened count, and the checker compares with whatever the API server holds at the end.
          }
        }
      })();
      return {
        writes: () => writes,
        stop: async () => {
          running = false;
          await loop;
          return writes;
        },
      };
    }

    beforeAll(async () => {
      node = await startNodeWithImages([await projectImage(), await mariadbImage()]);
      dir = mkdtempSync(join(tmpdir(), 'install-mixed-'));
      const t = parse(readFileSync(join(ROOT, 'examples/mixed.yaml'), 'utf8')) as {
        pluginServer: { namespace: string; grpc: { exposure: unknown } };
      };
      exposeGrpcAtServiceName(t);
      topology = join(dir, 'topology.yaml');
      writeFileSync(topology, stringify(t));
      out = join(dir, 'out');
      await synthFile(topology, { out });
    }, 900_000);
    afterAll(async () => {
      if (node) expect(await node.stop()).toEqual([]);
    }, 180_000);

    /**
     * Each place in the summary's order with the form under test (`helm upgrade --install` installs and upgrades
     * alike), the kubeconfigs minted once their account's RBAC is there.
     */
    async function applyPlaces(): Promise<void> {
      for (const place of readSummary(out).places) {
        if (form === 'helm install') await helmInstall(node, out, place);
        else await node.kubectl(['apply', '--server-side', '-k', join(out, place.kustomize)]);
        if (place.kind === 'account-rbac') {
          const account = place.name.slice('account-'.length);
          await mintAccountKubeconfig(node, { topology, account, dir, server: IN_CLUSTER_API });
        }
      }
    }

    it('runs every pod Ready from the images built here, without restarts', { timeout: 600_000 }, async () => {
      const db = {
        namespace: 'mariadb',
        database: 'scale_agent',
        user: 'scale_agent',
        password: randomBytes(12).toString('hex'),
      };
      await node.kubectl(['apply', '-f', '-'], { input: JSON.stringify(mariadbManifests(db)) });
      // The accounts' namespaces exist in the target cluster before their RBAC is applied.
      for (const ns of ['spinnaker', 'ops']) await node.kubectl(['create', 'namespace', ns]);
      await createSecret(node, 'spinnaker', 'scale-agent-mysql', { url: mysqlUrl(db) });
      await createSecret(node, 'spinnaker', 'scale-agent-rest-tokens', { tokens: `${restToken} tester admin` });
      await waitAvailable(node, ['mariadb']);
      await applyPlaces();
      await waitAvailable(node, ['spinnaker', 'scale-agent']);
      restBase = `http://${await clusterIp(node, 'spinnaker', 'scale-agent-plugin-server')}:7002`;

      const pods = await allPods();
      expect(pods.map((p) => p.pod).filter((p) => p.startsWith('scale-agent-plugin-server-'))).toHaveLength(2);
      expect(pods.filter((p) => p.labels['app.kubernetes.io/component'] === 'agent')).toHaveLength(3);
      expectAllReady(pods);
    });

    it('registers every account through one replica and answers reads from either', { timeout: 180_000 }, async () => {
      const want = ['edge', 'ops', 'remote-prod'];
      await waitForAccounts(rest, want);
      const replicas = await podStates(node, 'spinnaker', PLUGIN_SERVER);
      expect(replicas).toHaveLength(2);
      // Each replica asked directly by its pod IP: the one that does not hold an agent's stream answers from MySQL.
      for (const r of replicas) {
        expect({ replica: r.pod, accounts: await credentialNames(at(`http://${r.ip}:7002`)) }).toEqual({
          replica: r.pod,
          accounts: want,
        });
      }
      // An object only the cluster-wide accounts cache, read back from each replica's MySQL-backed cache.
      for (const account of ['remote-prod', 'edge']) {
        for (const r of replicas) {
          const m = await rest(
            'GET',
            `/manifests/${account}/kube-system/${encodeURIComponent('deployment coredns')}`,
            undefined,
            `http://${r.ip}:7002`,
          );
          expect({ account, replica: r.pod, status: m.status }).toEqual({
            account,
            replica: r.pod,
            status: 200,
          });
        }
      }
    });

    it("gives the in-cluster agent's ServiceAccount read access only, as its read-only account says", async () => {
      // The edge agent (mode agent, access read-only) runs as the ServiceAccount its place creates.
      const sa = (
        await node.kubectl([
          '-n',
          'scale-agent',
          'get',
          'deployment',
          'scale-agent-agent-edge',
          '-o',
          'jsonpath={.spec.template.spec.serviceAccountName}',
        ])
      ).stdout;
      const can = async (...args: string[]) =>
        (
          await node.kubectl(['auth', 'can-i', `--as=system:serviceaccount:scale-agent:${sa}`, ...args], {
            allowFail: true,
          })
        ).stdout.trim();
      expect({
        list: await can('list', 'deployments.apps', '--all-namespaces'),
        watch: await can('watch', 'configmaps', '--all-namespaces'),
        create: await can('create', 'deployments.apps', '-n', 'ops'),
        secretData: await can('get', 'secrets', '-n', 'ops'),
      }).toEqual({ list: 'yes', watch: 'yes', create: 'no', secretData: 'no' });
    });

    it(
      "forwards an operation posted to the replica that does not hold the account, with synth's peer secret; " +
        '/internal/* refuses every other caller',
      { timeout: 180_000 },
      async () => {
        const replicas = await podStates(node, 'spinnaker', PLUGIN_SERVER);
        const views = [];
        for (const r of replicas) {
          const a = await rest('GET', '/armory/accounts?limit=1000', undefined, `http://${r.ip}:7002`);
          expect(a.status, a.body).toBe(200);
          const ops = (JSON.parse(a.body) as { items: { name: string; heldBy: unknown }[] }).items.find(
            (x) => x.name === 'ops',
          );
          views.push({ replica: r, heldBy: ops?.heldBy });
        }
        // The core agent's stream ends on one replica; the other knows it from MySQL, with the holder's pod address.
        const holder = views.find((v) => v.heldBy === 'local');
        const other = views.find((v) => v.heldBy !== 'local');
        expect(holder, JSON.stringify(views)).toBeDefined();
        expect(other?.heldBy).toMatchObject({ url: `http://${holder!.replica.ip}:7002` });
        await expectDeployed(node, at(`http://${other!.replica.ip}:7002`), {
          account: 'ops',
          namespace: 'ops',
          name: 'forwarded',
        });

        // A forward as a replica sends it, for an operation no task has: with the generated secret (read from the
        // Secret synth wrote) the replica takes the call and answers that; with the admin token, or nothing, 401.
        const peerSecret = Buffer.from(
          (
            await node.kubectl([
              '-n',
              'spinnaker',
              'get',
              'secret',
              'scale-agent-plugin-server-peer',
              '-o',
              'jsonpath={.data.secret}',
            ])
          ).stdout,
          'base64',
        ).toString('utf8');
        expect(peerSecret.length).toBeGreaterThanOrEqual(32);
        const forward = {
          operationId: 'no-such-operation',
          account: 'ops',
          type: 'liveGet',
          payload: {},
          deadlineMs: Date.now() + 60_000,
          cacheWaitMs: 0,
        };
        const internal = async (token: string | undefined): Promise<number> => {
          const r = await fetch(`http://${holder!.replica.ip}:7002/internal/operations`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
            body: JSON.stringify(forward),
            signal: AbortSignal.timeout(30_000),
          });
          await r.arrayBuffer();
          return r.status;
        };
        expect({
          peer: await internal(peerSecret),
          admin: await internal(restToken),
          none: await internal(undefined),
        }).toEqual({ peer: 404, admin: 401, none: 401 });
        // The same from a pod of the plugin-server's namespace (which its NetworkPolicy admits to the REST port):
        // sharing the network makes no caller a replica.
        const image = (
          await node.kubectl([
            '-n',
            'spinnaker',
            'get',
            'deployment',
            'scale-agent-plugin-server',
            '-o',
            'jsonpath={.spec.template.spec.containers[0].image}',
          ])
        ).stdout;
        const script =
          "const r = await fetch(process.argv[1], { method: 'POST', headers: { 'content-type': 'application/json', " +
          "authorization: 'Bearer ' + process.argv[2] }, body: process.argv[3] }); console.log('status=' + r.status);";
        const probe = await node.kubectl(
          [
            '-n',
            'spinnaker',
            'run',
            'not-a-replica',
            '--rm',
            '-i',
            '--restart=Never',
            `--image=${image}`,
            '--image-pull-policy=Never',
            '--command',
            '--',
            'node',
            '--input-type=module',
            '-e',
            script,
            `http://${holder!.replica.ip}:7002/internal/operations`,
            restToken,
            JSON.stringify(forward),
          ],
          { timeoutMs: 120_000 },
        );
        expect(/status=(\d+)/.exec(probe.stdout)?.[1], probe.stdout + probe.stderr).toBe('401');
      },
    );

    it(
      'takes a dynamic account with kubeconfigContents through the REST Service: the agent pod registers it and ' +
        'serves reads, without restarts',
      { timeout: 180_000 },
      async () => {
        // A kubeconfig as `scale-agent kubeconfig` mints it for remote-prod's ServiceAccount, sent as the account's
        // contents (not as a Secret): the plugin-server seals it with synth's generated key and sends it to the agent
        // of the account's zone, whose pod has a read-only root filesystem and no /tmp.
        const kubeconfig = await mintAccountKubeconfig(node, {
          topology,
          account: 'remote-prod',
          dir,
          server: IN_CLUSTER_API,
          applySecret: false,
        });
        const created = await rest('POST', '/armory/accounts/dynamic', {
          name: 'dyn-remote',
          zoneId: 'westeurope',
          kubeconfigContents: kubeconfig,
          kinds: ['Deployment'],
          permissions: { READ: ['sre'], WRITE: ['sre'] },
        });
        expect(created.status, created.body).toBe(201);
        await waitFor(
          'dyn-remote in /credentials',
          async () => (await credentialNames(rest)).includes('dyn-remote'),
          90_000,
        );
        const replicas = await podStates(node, 'spinnaker', PLUGIN_SERVER);
        for (const r of replicas) {
          const m = await waitForManifest(at(`http://${r.ip}:7002`), {
            account: 'dyn-remote',
            namespace: 'kube-system',
            name: 'deployment coredns',
          });
          expect({ replica: r.pod, ...m }).toMatchObject({
            replica: r.pod,
            account: 'dyn-remote',
            location: 'kube-system',
          });
        }
        const accounts = await rest('GET', '/armory/accounts?limit=1000');
        const dyn = (
          JSON.parse(accounts.body) as { items: { name: string; state: string; errorMessage: string }[] }
        ).items.find((a) => a.name === 'dyn-remote');
        expect(dyn).toMatchObject({ state: 'ACTIVE', errorMessage: '' });
        // The crash-loop this replaces (docs/security.md): the agent wrote the kubeconfig under /tmp and exited.
        expectAllReady(await allPods());
      },
    );

    it(
      'serves /metrics through the REST Service, and the agents on their health port, as promtool parses them',
      { timeout: 120_000 },
      async () => {
        const scrape = async (url: string) => {
          const r = await fetch(url, { signal: AbortSignal.timeout(30_000) });
          expect({ url, status: r.status }).toEqual({ url, status: 200 });
          return r.text();
        };
        const targets = [`${restBase}/metrics`];
        for (const p of await podStates(node, 'scale-agent', 'app.kubernetes.io/component=agent'))
          targets.push(`http://${p.ip}:8081/metrics`);
        for (const p of await podStates(node, 'spinnaker', 'app.kubernetes.io/component=agent'))
          targets.push(`http://${p.ip}:8081/metrics`);
        expect(targets).toHaveLength(4);
        for (const url of targets) {
          expect({ url, ...(await promtoolProblems(await scrape(url))) }).toEqual({ url, parsed: true, problems: [] });
        }
      },
    );

    it(
      'loses nothing when a plugin-server replica and then the agent are deleted under churn',
      { timeout: 300_000 },
      async () => {
        for (const [what, selector] of [
          ['plugin-server replica', PLUGIN_SERVER],
          ['agent core', 'app.kubernetes.io/instance=core'],
        ] as const) {
          const c = churn(what.replace(/\W+/g, '-'));
          await waitFor('the first writes of the churn', () => c.writes() > 5);
          const [victim] = await podStates(node, 'spinnaker', selector);
          await node.kubectl(['-n', 'spinnaker', 'delete', 'pod', victim!.pod, '--wait=false']);
          await waitAvailable(node, ['spinnaker']);
          await waitFor(
            `a new pod instead of ${victim!.pod}, Ready`,
            async () => {
              const now = await podStates(node, 'spinnaker', selector);
              return !now.some((p) => p.pod === victim!.pod) && now.every((p) => p.containers.every((x) => x.ready));
            },
            150_000,
          );
          const writes = await c.stop();
          expect(writes).toBeGreaterThan(0);
          for (const account of ['ops']) {
            const diff = await waitForCacheToMatch(cacheOf(account), 90_000);
            expect({ what, account, equal: diff.equal }).toEqual({ what, account, equal: true });
          }
        }
      },
    );

    it(
      `rolls a changed topology out with ${form === 'helm install' ? 'helm upgrade' : 'kubectl apply -k'}: the added ` +
        'in-cluster agent deploys with its own RBAC, nothing lost',
      { timeout: 400_000 },
      async () => {
        // The change an operator makes: one more cluster, with an in-cluster agent (mode agent) that may write to
        // namespace apps only. synth again into the same directory keeps the CA and the other certificates.
        const t = parse(readFileSync(topology, 'utf8')) as { agents: unknown[] };
        t.agents.push({
          name: 'inside',
          mode: 'agent',
          accounts: [
            {
              name: 'inside',
              serviceAccount: true,
              namespaces: ['apps'],
              access: 'read-write',
              permissions: { READ: ['sre'], WRITE: ['sre'] },
            },
          ],
        });
        writeFileSync(topology, stringify(t));
        await synthFile(topology, { out });
        await node.kubectl(['create', 'namespace', 'apps']);
        const c = churn('rollout');
        await applyPlaces();
        await waitRolledOut(node, ['spinnaker', 'scale-agent']);
        await waitFor(
          'account inside in /credentials',
          async () => (await credentialNames(rest)).includes('inside'),
          120_000,
        );
        const writes = await c.stop();
        expect(writes).toBeGreaterThan(0);
        for (const account of ['ops']) {
          const diff = await waitForCacheToMatch(cacheOf(account), 90_000);
          expect({ account, equal: diff.equal }).toEqual({ account, equal: true });
        }

        const sa =
          'system:serviceaccount:scale-agent:' +
          (
            await node.kubectl([
              '-n',
              'scale-agent',
              'get',
              'deployment',
              'scale-agent-agent-inside',
              '-o',
              'jsonpath={.spec.template.spec.serviceAccountName}',
            ])
          ).stdout;
        const can = async (...args: string[]) =>
          (await node.kubectl(['auth', 'can-i', `--as=${sa}`, ...args], { allowFail: true })).stdout.trim();
        expect({
          watchApps: await can('watch', 'configmaps', '-n', 'apps'),
          createApps: await can('create', 'configmaps', '-n', 'apps'),
          createOps: await can('create', 'configmaps', '-n', 'ops'),
        }).toEqual({ watchApps: 'yes', createApps: 'yes', createOps: 'no' });

        // An Orca-shaped deploy to the new account: the agent applies it with its ServiceAccount's token.
        await expectDeployed(node, rest, { account: 'inside', namespace: 'apps', name: 'from-orca' });

        // Settled after the rollout: every pod ready again (an agent whose stream the rollout cut is unready until it
        // has synced again and been probed), none restarted.
        expectAllReady(await settledPods(allPods));
      },
    );

    // The chart's own test (a pod from the same image asking the plugin-server's /readyz through its Service).
    if (form === 'helm install') {
      it('passes helm test for every release', { timeout: 300_000 }, async () => {
        await expectHelmTestsPass(node, out);
      });
    }
  },
);
