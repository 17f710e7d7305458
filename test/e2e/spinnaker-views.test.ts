/**
 * Clouddriver's read views (what Deck, Gate and Orca read) for agent accounts, end to end: objects deployed through
 * `/kubernetes/ops` as Orca sends them, run by the real agent against the real control plane (whose
 * kube-controller-manager creates the ReplicaSets and Pods; with no kubelet the Pods stay Pending, which Deck shows
 * as Down), cached by the real plugin-server, read over HTTP, with the memory and the MySQL store.
 *
 * The scenarios are those of Clouddriver's own KubernetesDataProviderIntegrationTest and InfrastructureIT, with our
 * own manifests: a versioned ReplicaSet cluster whose older version was disabled (its load balancer no longer
 * selects it), a Deployment with two ReplicaSet generations, Services, an Ingress and NetworkPolicies, an object
 * without moniker annotations, and one application in two accounts. The facts asserted are the ones those tests
 * assert: which applications, clusters, server groups, instances and load balancers exist, how they link, and the
 * fields Deck reads.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, waitFor } from '../infra/index.js';
import { KwokNode } from '../infra/kwok.js';
import { replicaSet } from '../infra/manifests.js';
import type { PluginServerProcess } from '../infra/processes.js';
import { startStack, type Stack } from '../infra/stack.js';
import { OpsClient, type Obj } from './operations-helpers.js';

const IMAGE_014 = 'registry.example.com/backend@sha256:' + 'a'.repeat(64);
const IMAGE_015 = 'registry.example.com/backend@sha256:' + 'b'.repeat(64);

const backendReplicaSet = (image: string) => ({
  apiVersion: 'apps/v1',
  kind: 'ReplicaSet',
  metadata: { name: 'backend', annotations: { 'traffic.spinnaker.io/load-balancers': '["service backendlb"]' } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { tier: 'backend' } },
    template: { metadata: { labels: { tier: 'backend' } }, spec: { containers: [{ name: 'main', image }] } },
  },
});

const service = (name: string, selector: Record<string, string>) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name },
  spec: { selector, ports: [{ port: 80, targetPort: 8080 }] },
});

const frontendDeployment = (image: string) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'frontend' },
  spec: {
    replicas: 2,
    // Recreate: the old generation is scaled to 0 at once, so the rollout does not wait for Pods that never run.
    strategy: { type: 'Recreate' },
    selector: { matchLabels: { tier: 'frontend' } },
    template: {
      metadata: { labels: { tier: 'frontend', 'load-balancer': 'frontend' } },
      spec: { containers: [{ name: 'main', image }] },
    },
  },
});

const networkPolicy = (name: string) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name },
  spec: {
    podSelector: {},
    policyTypes: ['Ingress'],
    ingress: [
      {
        ports: [
          { protocol: 'TCP', port: 8080 },
          { protocol: 'TCP', port: 'metrics' },
        ],
      },
    ],
  },
});

function deploy(account: string, ns: string, app: string, manifests: Obj[], extra: Obj = {}): Obj[] {
  return [
    {
      deployManifest: {
        account,
        cloudProvider: 'kubernetes',
        moniker: { app },
        namespaceOverride: ns,
        manifests,
        ...extra,
      },
    },
  ];
}

for (const storeType of ['memory', 'mysql'] as const) {
  describe(`Spinnaker read views (${storeType} store)`, () => {
    let stack: Stack;
    let nsBack: string;
    let nsFront: string;
    let nsOther: string;
    let server: PluginServerProcess;
    let ops: OpsClient;
    const account = `views-${storeType}`;
    const account2 = `views2-${storeType}`;

    const get = async (path: string, headers: Record<string, string> = {}) => {
      const res = await fetch(server.httpBase + path, { headers });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : undefined) as Obj };
    };
    const ok = async (path: string, headers?: Record<string, string>): Promise<Obj> => {
      const r = await get(path, headers);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
      return r.body;
    };
    const enc = encodeURIComponent;

    beforeAll(async () => {
      stack = await startStack({
        name: `views-${storeType}`,
        store: storeType,
        namespaces: [`views-back-${storeType}`, `views-front-${storeType}`, `views-other-${storeType}`],
      });
      [nsBack, nsFront, nsOther] = stack.namespaces as [string, string, string];
      server = stack.server;
      await stack.addAgent({
        accounts: [
          { name: account, namespaces: [nsBack, nsFront] },
          { name: account2, namespaces: [nsOther] },
        ],
      });
      ops = new OpsClient(server);

      // backendapp: a versioned ReplicaSet cluster behind a Service; v000 is then disabled as a red/black would.
      await ops.run(deploy(account, nsBack, 'backendapp', [service('backendlb', { 'load-balancer': 'backend' })]));
      await ops.run(deploy(account, nsBack, 'backendapp', [backendReplicaSet(IMAGE_014)]));
      await ops.run(deploy(account, nsBack, 'backendapp', [backendReplicaSet(IMAGE_015)]));
      await ops.run([
        {
          disableManifest: {
            account,
            cloudProvider: 'kubernetes',
            location: nsBack,
            manifestName: 'replicaSet backend-v000',
            app: 'backendapp',
          },
        },
      ]);
      await ops.run(deploy(account, nsBack, 'securityapp', [networkPolicy('default-deny-ingress')]));
      await ops.run(deploy(account, nsBack, 'securityapp', [networkPolicy('default-deny-ingress-second')]));

      // frontendapp: a Deployment with two generations, its Service and an Ingress; and the same app in account2.
      await ops.run(deploy(account, nsFront, 'frontendapp', [service('frontend', { 'load-balancer': 'frontend' })]));
      await ops.run(deploy(account, nsFront, 'frontendapp', [frontendDeployment('nginx:1.19.0')]));
      await ops.run(deploy(account, nsFront, 'frontendapp', [frontendDeployment('nginx:1.19.1')]));
      await ops.run(
        deploy(account, nsFront, 'frontendapp', [
          {
            apiVersion: 'networking.k8s.io/v1',
            kind: 'Ingress',
            metadata: { name: 'frontend' },
            spec: { defaultBackend: { service: { name: 'frontend', port: { number: 80 } } } },
          },
        ]),
      );
      await ops.run(deploy(account2, nsOther, 'frontendapp', [frontendDeployment('nginx:1.19.1')]));

      // Not deployed by Spinnaker: no moniker annotations, so Clouddriver parses the name.
      await kubectl(['apply', '-n', nsBack, '-f', '-'], {
        input: JSON.stringify(
          replicaSet('legacy-web-v003', { tier: 'legacy' }, 0, { containers: [{ name: 'm', image: 'busybox' }] }),
        ),
      });

      // The controllers' work (ReplicaSets of the Deployment, Pods of every ReplicaSet) reaches the cache later.
      await waitFor(
        'every Pod and ReplicaSet cached',
        async () => {
          const front = await get(`/applications/frontendapp/serverGroups?expand=true`);
          const back = await get(`/applications/backendapp/serverGroups?expand=true`);
          const legacy = await get(`/applications/legacy/serverGroups`);
          const rows = [...(front.body as unknown as Obj[]), ...(back.body as unknown as Obj[])];
          const pods = rows.reduce((n, sg) => n + (sg.instances as Obj[]).length, 0);
          // frontend: new generation 2 Pods in each account; backend: 1 Pod per version. Every server group's
          // Pods match its desired count, so the old generation's deleted Pods have left the cache too (a sum alone
          // passed on a loaded machine while the new Pods were cached before the old ones' deletes).
          const settled = rows.every((sg) => (sg.instances as Obj[]).length === (sg.capacity as Obj).desired);
          return rows.length === 5 && pods === 6 && settled && (legacy.body as unknown as Obj[]).length === 1;
        },
        90_000,
      );
    }, 240_000);

    afterAll(async () => {
      await stack?.stop();
    });

    it('lists applications from their clusters, in every account, and an application with its clusters', async () => {
      const apps = (await ok('/applications')) as unknown as Obj[];
      const mine = apps.filter((a) => ['backendapp', 'frontendapp', 'legacy', 'securityapp'].includes(a.name));
      // securityapp has only NetworkPolicies: no cluster, so no application (as Clouddriver builds /applications).
      expect(mine).toEqual([
        {
          name: 'backendapp',
          attributes: { name: 'backendapp' },
          clusterNames: { [account]: ['replicaSet backend'] },
        },
        {
          name: 'frontendapp',
          attributes: { name: 'frontendapp' },
          clusterNames: { [account]: ['deployment frontend'], [account2]: ['deployment frontend'] },
        },
        { name: 'legacy', attributes: { name: 'legacy' }, clusterNames: { [account]: ['legacy-web'] } },
      ]);
      expect(await ok('/applications/frontendapp')).toEqual({
        name: 'frontendapp',
        attributes: { name: 'frontendapp', cloudProviders: 'kubernetes' },
        clusters: {
          [account]: [{ name: 'deployment frontend', loadBalancers: [], serverGroups: [], provider: 'kubernetes' }],
          [account2]: [{ name: 'deployment frontend', loadBalancers: [], serverGroups: [], provider: 'kubernetes' }],
        },
      });
      expect(await ok('/applications/frontendapp/clusters')).toEqual({
        [account]: ['deployment frontend'],
        [account2]: ['deployment frontend'],
      });
    });

    it('a cluster: by account (names), by name (expanded, with its load balancers) and with its provider', async () => {
      const byAccount = (await ok(`/applications/backendapp/clusters/${account}`)) as unknown as Obj[];
      expect(byAccount).toEqual([
        {
          name: 'replicaSet backend',
          account,
          moniker: { app: 'backendapp', cluster: 'replicaSet backend' },
          loadBalancers: ['service backendlb'],
          serverGroups: ['replicaSet backend-v000', 'replicaSet backend-v001'],
        },
      ]);
      const [cluster] = (await ok(
        `/applications/frontendapp/clusters/${account}/${enc('deployment frontend')}?expand=true`,
      )) as unknown as Obj[];
      expect(cluster).toMatchObject({
        accountName: account,
        name: 'deployment frontend',
        application: 'frontendapp',
        type: 'kubernetes',
        moniker: { app: 'frontendapp', cluster: 'deployment frontend' },
      });
      expect(cluster!.serverGroups).toHaveLength(2);
      // The Service selects the ReplicaSets; the Ingress fronts the Service, not server groups.
      expect((cluster!.loadBalancers as Obj[]).map((lb) => lb.name)).toEqual(['service frontend']);
      const single = await ok(`/applications/frontendapp/clusters/${account}/${enc('deployment frontend')}/kubernetes`);
      expect(single).toMatchObject({ accountName: account, name: 'deployment frontend', application: 'frontendapp' });
      const summary = await ok(
        `/applications/frontendapp/clusters/${account}/${enc('deployment frontend')}/kubernetes?expand=false`,
      );
      expect(summary.serverGroups).toEqual([]);
      expect(summary.loadBalancers).toEqual([]);
    });

    it('server groups: the disabled older version, its instances, load balancers, images and sequence', async () => {
      const v000 = await ok(`/serverGroups/${account}/${nsBack}/${enc('replicaSet backend-v000')}`);
      const v001 = await ok(`/serverGroups/${account}/${nsBack}/${enc('replicaSet backend-v001')}`);
      expect(v000).toMatchObject({
        name: 'replicaSet backend-v000',
        displayName: 'backend-v000',
        account,
        region: nsBack,
        namespace: nsBack,
        kind: 'replicaSet',
        apiVersion: 'apps/v1',
        cloudProvider: 'kubernetes',
        moniker: { app: 'backendapp', cluster: 'replicaSet backend', sequence: 0 },
        capacity: { desired: 1 },
        buildInfo: { images: [IMAGE_014] },
        loadBalancers: ['service backendlb'],
        // Disabled: the annotation names a load balancer, but the Service no longer selects its Pods' template.
        disabled: true,
        serverGroupManagers: [],
        instanceCounts: { total: 1, up: 0, down: 1 },
      });
      expect(typeof v000.createdTime).toBe('number');
      expect(v001).toMatchObject({
        moniker: { app: 'backendapp', cluster: 'replicaSet backend', sequence: 1 },
        buildInfo: { images: [IMAGE_015] },
        loadBalancers: ['service backendlb'],
        disabled: false,
      });
      const [instance] = v001.instances as Obj[];
      const pods = JSON.parse(
        (await kubectl(['get', 'pods', '-n', nsBack, '-l', 'tier=backend', '-o', 'json'])).stdout,
      ) as { items: Obj[] };
      const pod = pods.items.find((p) => (p.metadata.ownerReferences as Obj[])[0]!.name === 'backend-v001')!;
      // Deck's instance id is the Pod's uid; a Pending Pod (no kubelet here) is Down.
      expect(instance).toMatchObject({
        name: pod.metadata.uid,
        humanReadableName: `pod ${pod.metadata.name}`,
        displayName: pod.metadata.name,
        zone: nsBack,
        kind: 'pod',
        healthState: 'Down',
        health: [{ state: 'Down', source: 'Pod', type: 'kubernetes/pod', platform: 'platform' }],
      });
      // The same through the application, and wrong namespaces or names are 404 with a code, malformed ones 400.
      expect(
        (await ok(`/applications/backendapp/serverGroups/${account}/${nsBack}/${enc('replicaSet backend-v001')}`)).name,
      ).toBe('replicaSet backend-v001');
      const wrongNs = await get(`/serverGroups/${account}/${nsFront}/${enc('replicaSet backend-v001')}`);
      expect(wrongNs.status).toBe(404);
      expect(wrongNs.body.code).toBe('SA_ERR_NOT_FOUND');
      const malformed = await get(`/serverGroups/${account}/${nsBack}/backend-v001`);
      expect(malformed.status).toBe(400);
      expect(malformed.body.code).toBe('SA_ERR_INVALID_INPUT');
      expect((await get(`/serverGroups/nosuchaccount/${nsBack}/${enc('replicaSet backend-v001')}`)).status).toBe(404);
    });

    it('Deployment-owned server groups: sequence from the revision, their manager, and the manager view', async () => {
      const rows = (await ok('/applications/frontendapp/serverGroups?expand=true')) as unknown as Obj[];
      const mine = rows.filter((r) => r.account === account).sort((a, b) => a.moniker.sequence - b.moniker.sequence);
      expect(mine.map((r) => [r.moniker.sequence, r.capacity.desired, r.buildInfo.images, r.instances.length])).toEqual(
        [
          [1, 0, ['nginx:1.19.0'], 0],
          [2, 2, ['nginx:1.19.1'], 2],
        ],
      );
      for (const r of mine) {
        expect(r).toMatchObject({
          cluster: 'deployment frontend',
          accountName: account,
          application: 'frontendapp',
          region: nsFront,
          loadBalancers: ['service frontend'],
          disabled: false,
          serverGroupManagers: [{ account, location: nsFront, name: 'frontend' }],
        });
      }
      const managers = (await ok('/applications/frontendapp/serverGroupManagers')) as unknown as Obj[];
      const manager = managers.find((m) => m.account === account)!;
      expect(manager).toMatchObject({
        name: 'deployment frontend',
        kind: 'deployment',
        region: nsFront,
        cloudProvider: 'kubernetes',
        moniker: { app: 'frontendapp', cluster: 'deployment frontend' },
      });
      expect((manager.serverGroups as Obj[]).map((s) => s.moniker.sequence).sort()).toEqual([1, 2]);
      expect(managers.map((m) => m.account).sort()).toEqual([account, account2].sort());

      // The list Deck's cluster view reads (not expanded): InstanceViewModel rows and isDisabled.
      const list = (await ok(
        `/applications/frontendapp/serverGroups?clusters=${enc(`${account}:deployment frontend`)}`,
      )) as unknown as Obj[];
      expect(list).toHaveLength(2);
      const current = list.find((r) => r.capacity.desired === 2)!;
      expect(current).toMatchObject({ cluster: 'deployment frontend', isDisabled: false, account, region: nsFront });
      expect(Object.keys((current.instances as Obj[])[0]!).sort()).toEqual([
        'availabilityZone',
        'health',
        'healthState',
        'id',
        'name',
      ]);
      const both = (await ok('/serverGroups?applications=frontendapp,backendapp')) as unknown as Obj[];
      expect(both.map((r) => r.name).sort()).toEqual(
        [...rows.map((r) => r.name), 'replicaSet backend-v000', 'replicaSet backend-v001'].sort(),
      );
    });

    it('an object without moniker annotations belongs to the application and cluster its name parses to', async () => {
      const [legacy] = (await ok('/applications/legacy/serverGroups?expand=true')) as unknown as Obj[];
      expect(legacy).toMatchObject({
        name: 'replicaSet legacy-web-v003',
        cluster: 'legacy-web',
        moniker: { app: 'legacy', cluster: 'legacy-web', sequence: 3 },
        disabled: false,
        loadBalancers: [],
      });
    });

    it('load balancers of an application, one by name, and the server groups behind them', async () => {
      const lbs = (await ok('/applications/frontendapp/loadBalancers')) as unknown as Obj[];
      expect(lbs.map((lb) => `${lb.account}/${lb.name}`)).toEqual([
        `${account}/ingress frontend`,
        `${account}/service frontend`,
      ]);
      const svc = lbs.find((lb) => lb.name === 'service frontend')!;
      expect(svc).toMatchObject({ kind: 'service', region: nsFront, moniker: { app: 'frontendapp' } });
      expect((svc.serverGroups as Obj[]).map((s) => [s.isDisabled, (s.instances as Obj[]).length]).sort()).toEqual([
        [false, 0],
        [false, 2],
      ]);
      const [backend] = (await ok(
        `/kubernetes/loadBalancers/${account}/${nsBack}/${enc('service backendlb')}`,
      )) as unknown as Obj[];
      // Only the enabled version is behind the Service.
      expect((backend!.serverGroups as Obj[]).map((s) => s.name)).toEqual(['replicaSet backend-v001']);
      expect(backend!.moniker).toMatchObject({ app: 'backendapp', cluster: 'service backendlb' });
      expect(await ok(`/kubernetes/loadBalancers/${account}/${nsBack}/${enc('service nosuch')}`)).toEqual([]);
    });

    it('an instance by name', async () => {
      const pods = JSON.parse(
        (await kubectl(['get', 'pods', '-n', nsFront, '-l', 'tier=frontend', '-o', 'json'])).stdout,
      ) as { items: Obj[] };
      const pod = pods.items[0]!;
      const instance = await ok(`/instances/${account}/${nsFront}/${enc(`pod ${pod.metadata.name}`)}`);
      expect(instance).toMatchObject({
        name: pod.metadata.uid,
        displayName: pod.metadata.name,
        humanReadableName: `pod ${pod.metadata.name}`,
        account,
        namespace: nsFront,
        moniker: { app: 'frontendapp', cluster: 'deployment frontend' },
      });
      expect((await get(`/instances/${account}/${nsFront}/${enc('pod nosuch')}`)).status).toBe(404);
    });

    it("an instance's console: each container's log, read live through the agent (kwok node)", async () => {
      const node = await KwokNode.start({
        dir: join(stack.dir, 'kwok'),
        name: `kwok-${nsBack}`,
        logs: [{ namespace: nsBack, containers: ['init', 'main'], text: 'listening on :8080\nready\n' }],
      });
      try {
        await kubectl(['apply', '-n', nsBack, '-f', '-'], {
          input: JSON.stringify({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: { name: 'console-demo' },
            spec: {
              nodeName: `kwok-${nsBack}`,
              initContainers: [{ name: 'init', image: 'busybox' }],
              containers: [{ name: 'main', image: 'busybox' }],
            },
          }),
        });
        const path = `/instances/${account}/${nsBack}/${enc('pod console-demo')}/console?provider=kubernetes`;
        const console = await waitFor('the pod cached and running', async () => {
          const r = await get(path);
          return r.status === 200 && (r.body.output as Obj[])[1]?.output === 'listening on :8080\nready\n'
            ? r.body
            : undefined;
        });
        expect(console.output).toEqual([
          { name: 'init', output: 'listening on :8080\nready\n' },
          { name: 'main', output: 'listening on :8080\nready\n' },
        ]);
      } finally {
        await node.stop();
      }
      // Gone from the cluster: Clouddriver's answer, not an error.
      expect(await ok(`/instances/${account}/${nsBack}/${enc('pod nosuch')}/console`)).toEqual({
        output: [{ name: 'Error', output: 'Failed to retrieve pod data; pod may have been deleted.' }],
      });
      expect((await get(`/instances/nosuchaccount/${nsBack}/${enc('pod console-demo')}/console`)).status).toBe(404);
    });

    it('security groups (NetworkPolicies): listings by account and namespace, one by name', async () => {
      const all = await ok('/securityGroups');
      const names = [`networkPolicy default-deny-ingress`, `networkPolicy default-deny-ingress-second`];
      expect(all[account].kubernetes[nsBack]).toEqual(names.map((n) => ({ name: n, id: n })));
      expect((await ok(`/securityGroups/${account}`)).kubernetes[nsBack]).toHaveLength(2);
      expect((await ok(`/securityGroups/${account}?region=${nsBack}`)).kubernetes).toHaveLength(2);
      expect((await ok(`/securityGroups/${account}/kubernetes`))[nsBack]).toHaveLength(2);
      expect(
        (await ok(`/securityGroups/${account}/kubernetes/${enc('networkpolicy default-deny-ingress')}`))[nsBack],
      ).toHaveLength(1);
      const one = await ok(
        `/securityGroups/${account}/kubernetes/${nsBack}/${enc('networkPolicy default-deny-ingress')}`,
      );
      expect(one).toMatchObject({
        displayName: 'default-deny-ingress',
        accountName: account,
        region: nsBack,
        moniker: { app: 'securityapp' },
        inboundRules: [
          { protocol: 'TCP', portRanges: [{ startPort: 8080, endPort: 8080 }] },
          { protocol: 'TCP', portRanges: [{ startPortName: 'metrics', endPortName: 'metrics' }] },
        ],
        outboundRules: [],
      });
      expect((await get(`/securityGroups/${account}/kubernetes/${nsBack}/${enc('networkPolicy nosuch')}`)).status).toBe(
        404,
      );
      expect(await ok(`/securityGroups/nosuchaccount`)).toEqual({});
    });

    it('search: by name across kinds, by namespace and kind (the manifest selector), and its errors', async () => {
      const [result] = (await ok(
        `/search?q=backend-v001&type=serverGroups,instances&pageSize=100`,
      )) as unknown as Obj[];
      expect(result).toMatchObject({ query: 'backend-v001', platform: 'kubernetes', pageNumber: 1, pageSize: 100 });
      const hits = (result!.results as Obj[]).filter((h) => h.account === account);
      expect(hits.map((h) => h.type).sort()).toEqual(['instances', 'serverGroups']);
      expect(hits.find((h) => h.type === 'serverGroups')).toEqual({
        provider: 'kubernetes',
        group: 'replicaSet',
        kubernetesKind: 'replicaSet',
        account,
        namespace: nsBack,
        region: nsBack,
        name: 'replicaSet backend-v001',
        serverGroup: 'replicaSet backend-v001',
        type: 'serverGroups',
      });
      expect(hits.find((h) => h.type === 'instances')!.instanceId).toMatch(/^pod backend-v001-/);
      const [byNs] = (await ok(`/search?q=${nsBack}&type=service`)) as unknown as Obj[];
      expect((byNs!.results as Obj[]).map((h) => h.name)).toEqual(['service backendlb']);
      const [apps] = (await ok(`/search?q=frontend&type=applications`)) as unknown as Obj[];
      expect((apps!.results as Obj[]).map((h) => h.name)).toContain('frontendapp');
      const noType = await get('/search?q=x');
      expect(noType.status).toBe(400);
      expect(noType.body.code).toBe('SA_ERR_INVALID_INPUT');
      expect((await get('/search?q=x&type=pod&pageSize=0')).status).toBe(400);
    });

    it('X-SPINNAKER-ACCOUNTS (the WRITE list) hides nothing from the views: without Fiat, reads are not per user', async () => {
      const other = { 'X-SPINNAKER-ACCOUNTS': account2 };
      const apps = (await ok('/applications', other)) as unknown as Obj[];
      expect(Object.keys(apps.find((a) => a.name === 'frontendapp')!.clusterNames as Obj)).toContain(account);
      const sgs = (await ok('/applications/frontendapp/serverGroups?expand=true', other)) as unknown as Obj[];
      expect(new Set(sgs.map((s) => s.account))).toContain(account);
      expect((await get(`/serverGroups/${account}/${nsBack}/${enc('replicaSet backend-v001')}`, other)).status).toBe(
        200,
      );
      expect((await get(`/applications/frontendapp/clusters/${account}`, other)).status).toBe(200);
    });

    it('unknown applications: 404 for one, empty lists for its collections, never 500', async () => {
      const missing = await get('/applications/nosuchapp');
      expect(missing.status).toBe(404);
      expect(missing.body.code).toBe('SA_ERR_NOT_FOUND');
      expect(await ok('/applications/nosuchapp/clusters')).toEqual({});
      expect(await ok('/applications/nosuchapp/serverGroups')).toEqual([]);
      expect(await ok('/applications/nosuchapp/loadBalancers')).toEqual([]);
      expect(await ok('/applications/nosuchapp/serverGroupManagers')).toEqual([]);
      expect(await ok('/applications/nosuchapp/rawResources')).toEqual([]);
      expect((await get(`/applications/nosuchapp/clusters/${account}`)).status).toBe(404);
      expect((await get(`/applications/backendapp/clusters/${account}/nosuch`)).status).toBe(404);
      expect((await get(`/applications/backendapp/clusters/${account}/${enc('replicaSet backend')}/aws`)).status).toBe(
        404,
      );
      expect((await get('/serverGroups')).status).toBe(400);
    });

    it('manifests carry the Events about the object unless includeEvents=false (Deck sends none, Orca false)', async () => {
      const path = `/manifests/${account}/${nsFront}/${enc('deployment frontend')}`;
      // The Deployment controller records its scaling as Events about the Deployment.
      const withEvents = await waitFor('ScalingReplicaSet events cached', async () => {
        const m = await ok(path);
        return (m.events as Obj[]).some((e) => e.reason === 'ScalingReplicaSet') ? m : undefined;
      });
      for (const e of withEvents.events as Obj[]) {
        expect(e.involvedObject).toMatchObject({ kind: 'Deployment', name: 'frontend', namespace: nsFront });
      }
      expect((await ok(`${path}?includeEvents=false`)).events).toEqual([]);
    });

    it('raw resources of an application', async () => {
      const raw = (await ok('/applications/backendapp/rawResources')) as unknown as Obj[];
      expect(raw.map((r) => r.name).sort()).toEqual([
        'replicaSet backend-v000',
        'replicaSet backend-v001',
        'service backendlb',
      ]);
      expect(raw[0]).toMatchObject({ account, namespace: nsBack, region: nsBack, moniker: { app: 'backendapp' } });
    });
  });
}
