import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import { korkArtifact } from '../../infra/records.js';
import { account, change, configMap, getJson, startServer, TestAgent } from './helpers.js';

describe('plugin-server REST API', () => {
  let server: PluginServer;
  let base: string;
  let agent: TestAgent;

  beforeAll(async () => {
    let address: string;
    ({ server, base, address } = await startServer());
    agent = new TestAgent(address);
    await agent.hello([
      { ...account('dev'), namespaces: [] },
      {
        ...account('prod', '10.0.0.2:6443'),
        namespaces: ['shop'],
        permissions: { read: ['Shop-Readers', 'ops'], write: ['ops'] },
        onlySpinnakerManaged: true,
      },
    ]);
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {
        name: 'web',
        namespace: 'payments',
        generation: 2,
        resourceVersion: '20',
        annotations: { 'moniker.spinnaker.io/application': 'shop', 'moniker.spinnaker.io/cluster': 'deployment web' },
      },
      spec: {
        replicas: 2,
        template: {
          spec: {
            containers: [
              { name: 'web', image: 'ghcr.io/acme/web:1.4.2', envFrom: [{ configMapRef: { name: 'web-config' } }] },
            ],
            volumes: [{ name: 's', secret: { secretName: 'web-tls' } }],
          },
        },
      },
      status: { observedGeneration: 2, replicas: 2, updatedReplicas: 2, readyReplicas: 1, availableReplicas: 1 },
    };
    const replicaSet = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: {
        name: 'shop-api-v001',
        namespace: 'payments',
        resourceVersion: '24',
        annotations: {
          'moniker.spinnaker.io/application': 'shop',
          'moniker.spinnaker.io/cluster': 'replicaSet shop-api',
        },
      },
      spec: { replicas: 1, template: { spec: { containers: [{ name: 'api', image: 'ghcr.io/acme/api:2' }] } } },
    };
    await agent.batch([
      change('dev', 'ADDED', deployment),
      change('dev', 'ADDED', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'payments', resourceVersion: '21' },
      }),
      change('dev', 'ADDED', configMap('app-config', '22', {}, 'payments')),
      change('dev', 'ADDED', replicaSet),
      change('dev', 'ADDED', {
        apiVersion: 'stable.example.com/v1',
        kind: 'CronTab',
        metadata: { name: 'nightly', namespace: 'payments', resourceVersion: '23' },
      }),
    ]);
  });
  afterAll(async () => {
    agent.close();
    await server.stop();
  });

  it('GET /credentials lists accounts in Clouddriver shape, expanded on request', async () => {
    const plain = await getJson(`${base}/credentials`);
    expect(plain.status).toBe(200);
    expect(plain.body).toEqual([
      {
        name: 'dev',
        environment: 'dev',
        accountType: 'dev',
        cloudProvider: 'kubernetes',
        type: 'kubernetes',
        requiredGroupMembership: [],
        permissions: {},
        challengeDestructiveActions: false,
        primaryAccount: false,
      },
      expect.objectContaining({ name: 'prod', permissions: { READ: ['shop-readers', 'ops'], WRITE: ['ops'] } }),
    ]);
    const expanded = (await getJson(`${base}/credentials?expand=true`)).body as Record<string, unknown>[];
    expect(expanded[0]).toMatchObject({
      name: 'dev',
      namespaces: ['payments'],
      enabled: true,
      dockerRegistries: [],
      spinnakerKindMap: expect.objectContaining({ deployment: 'serverGroupManagers', replicaSet: 'serverGroups' }),
    });
    expect(expanded[1]).toMatchObject({
      name: 'prod',
      namespaces: ['shop'],
      permissions: { READ: ['shop-readers', 'ops'], WRITE: ['ops'] },
      onlySpinnakerManaged: true,
      cacheAllApplicationRelationships: false,
    });
    expect((await getJson(`${base}/credentials/prod`)).body).toMatchObject({ name: 'prod', enabled: true });
  });

  it('X-SPINNAKER-ACCOUNTS (a WRITE list) filters no read, and refuses writes to other accounts with 403', async () => {
    // Gate fills the header with the user's WRITE accounts; Clouddriver reads need READ (Fiat), not a place in it.
    const onlyProd = { 'X-SPINNAKER-ACCOUNTS': 'prod' };
    const get = async (path: string) => {
      const r = await fetch(`${base}${path}`, { headers: onlyProd });
      return { status: r.status, body: (await r.json()) as unknown };
    };
    const list = (await get('/credentials?expand=true')).body as { name: string }[];
    expect(list.map((a) => a.name)).toEqual(['dev', 'prod']);
    expect(((await get('/credentials')).body as { name: string }[]).map((a) => a.name)).toEqual(['dev', 'prod']);
    expect((await get('/credentials/dev')).status).toBe(200);
    expect((await get('/manifests/dev/payments/deployment%20web')).status).toBe(200);
    const op = (acct: string) => [
      {
        deleteManifest: {
          cloudProvider: 'kubernetes',
          account: acct,
          location: 'payments',
          manifestName: 'deployment web',
          options: {},
        },
      },
    ];
    for (const path of ['/kubernetes/ops', '/ops']) {
      const r = await fetch(`${base}${path}`, {
        method: 'POST',
        headers: { ...onlyProd, 'content-type': 'application/json' },
        body: JSON.stringify(op('dev')),
      });
      expect({ path, body: await r.json() }).toMatchObject({ path, body: { status: 403, code: 'SA_ERR_FORBIDDEN' } });
    }
    // Refused before existence is checked: an unknown account outside the header is 403 as well, not 400.
    const unknown = await fetch(`${base}/kubernetes/ops`, {
      method: 'POST',
      headers: { ...onlyProd, 'content-type': 'application/json' },
      body: JSON.stringify(op('nope')),
    });
    expect(unknown.status).toBe(403);
  });

  it('404s are JSON with a stable code', async () => {
    const r = await getJson(`${base}/credentials/nope`);
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({
      status: 404,
      error: 'Not Found',
      code: 'SA_ERR_NOT_FOUND',
      message: 'Account does not exist (name: nope)',
    });
    const route = await getJson(`${base}/no/such/route`);
    expect(route).toMatchObject({ status: 404, body: { code: 'SA_ERR_NOT_FOUND' } });
  });

  it('GET /manifests returns the container with status, moniker and artifacts', async () => {
    const r = await getJson(`${base}/manifests/dev/payments/deployment%20web`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      account: 'dev',
      name: 'deployment web',
      location: 'payments',
      moniker: { app: 'shop', cluster: 'deployment web' },
      manifest: { kind: 'Deployment', metadata: { name: 'web' } },
      status: {
        stable: { state: false, message: 'Waiting for all replicas to be available' },
        paused: { state: false },
        available: { state: true },
        failed: { state: false },
      },
      events: [],
      warnings: [],
      metrics: [],
    });
    // As Clouddriver's Deployment handler lists them: image, volume Secret, envFrom ConfigMap; no location.
    expect((r.body as { artifacts: unknown[] }).artifacts).toEqual([
      korkArtifact('docker/image', 'ghcr.io/acme/web', 'ghcr.io/acme/web:1.4.2'),
      korkArtifact('kubernetes/secret', 'web-tls'),
      korkArtifact('kubernetes/configMap', 'web-config'),
    ]);
    // Aliases and case-insensitive kinds.
    expect((await getJson(`${base}/manifests/dev/payments/deploy%20web`)).status).toBe(200);
    expect((await getJson(`${base}/manifests/dev/payments/configmap%20app-config`)).body).toMatchObject({
      name: 'configMap app-config',
    });
    expect((await getJson(`${base}/manifests/dev/payments/crontab.stable.example.com%20nightly`)).body).toMatchObject({
      name: 'CronTab.stable.example.com nightly',
      status: { stable: { state: true } },
    });
  });

  it('server group lists: application only in the expanded rows, as Clouddriver answers', async () => {
    // ServerGroupController's summary row takes application from Frigga's parse of the name, which for
    // "replicaSet shop-api-v001" (a space) matches nothing, so its NON_NULL mapper leaves it out; the expanded row
    // takes it from the cluster's moniker (docs/clouddriver-compatibility.md, Applications and infrastructure).
    const summary = (await getJson(`${base}/applications/shop/serverGroups`)).body as Record<string, unknown>[];
    const row = summary.find((r) => r.name === 'replicaSet shop-api-v001');
    expect(row).toMatchObject({ cluster: 'replicaSet shop-api', moniker: { app: 'shop' } });
    expect(row).not.toHaveProperty('application');
    const expanded = (await getJson(`${base}/applications/shop/serverGroups?expand=true`)).body as Record<
      string,
      unknown
    >[];
    expect(expanded.find((r) => r.name === 'replicaSet shop-api-v001')).toMatchObject({ application: 'shop' });
  });

  it("Run Job's cancel (destroyJob) is answered as Clouddriver's Kubernetes provider answers it: 400, no task", async () => {
    // The body Orca's RunJobStage.cancel builds and DestroyJobTask posts for a Kubernetes Run Job: jobName is the
    // cloud provider (RunJobStage reads getCloudProvider() there), region the Job's namespace.
    const destroy = [
      { destroyJob: { jobName: 'kubernetes', cloudProvider: 'kubernetes', region: 'payments', credentials: 'dev' } },
    ];
    const tasksBefore = ((await getJson(`${base}/task`)).body as unknown[]).length;
    const res = await fetch(`${base}/kubernetes/ops?clientRequestId=cancel-1`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(destroy),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({
      message: "No atomic operation converter found for description 'destroyJob' and cloud provider 'kubernetes'",
    });
    expect(((await getJson(`${base}/task`)).body as unknown[]).length).toBe(tasksBefore);
  });

  it('cluster-scoped manifests answer on /_/, // and the two-segment form', async () => {
    for (const path of [
      '/manifests/dev/_/namespace%20payments',
      '/manifests/dev//namespace%20payments',
      '/manifests/dev/namespace%20payments',
    ]) {
      const r = await getJson(base + path);
      expect(r.status, path).toBe(200);
      expect(r.body).toMatchObject({ name: 'namespace payments', location: '' });
    }
  });

  it('absent manifests, unknown accounts and unparseable names are 404 in Clouddriver wording', async () => {
    for (const path of [
      '/manifests/dev/payments/deployment%20nope',
      '/manifests/nope/payments/deployment%20web',
      '/manifests/dev/payments/web',
    ]) {
      const r = await getJson(base + path);
      expect(r.status, path).toBe(404);
      expect(r.body).toMatchObject({
        code: 'SA_ERR_NOT_FOUND',
        message: expect.stringMatching(/^Manifest \(account: .*\) not found$/),
      });
    }
  });

  it('admin API: agents, accounts (paged, validated), account detail', async () => {
    expect((await getJson(`${base}/armory/agents`)).body).toEqual([
      expect.objectContaining({ agentId: 'agent-1', accounts: ['dev', 'prod'], caching: true, type: 'kubernetes' }),
    ]);
    expect((await getJson(`${base}/armory/accounts?limit=1&page=2`)).body).toMatchObject({
      items: [{ name: 'prod', state: 'ACTIVE', kubeHost: '10.0.0.2:6443' }],
      page: 2,
      limit: 1,
      total: 2,
    });
    const bad = await getJson(`${base}/armory/accounts?page=0`);
    expect(bad).toMatchObject({ status: 400, body: { code: 'SA_ERR_INVALID_INPUT', status: 400 } });
    expect((await getJson(`${base}/agents/kubernetes/accounts/prod`)).body).toMatchObject({
      name: 'prod',
      type: 'kubernetes',
      status: 'ACTIVE',
      // As the agent configured them (roles not lower-cased: that is Fiat's reading, in /credentials).
      config: {
        namespaces: ['shop'],
        permissions: { READ: ['Shop-Readers', 'ops'], WRITE: ['ops'] },
        onlySpinnakerManaged: true,
        cacheAllApplicationRelationships: false,
      },
      agents: [{ agentId: 'agent-1', caching: true }],
    });
    expect((await getJson(`${base}/admin/cache/dev?kind=ConfigMap`)).body).toEqual([
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        namespace: 'payments',
        name: 'app-config',
        uid: 'uid-app-config',
        resourceVersion: '22',
      },
    ]);
  });

  it('health, readiness and metrics', async () => {
    expect(await getJson(`${base}/healthz`)).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await getJson(`${base}/readyz`)).toEqual({ status: 200, body: { status: 'ready', reasons: [] } });
    const text = await (await fetch(`${base}/metrics`)).text();
    for (const name of [
      'scale_agent_plugin_server_sessions 1',
      'scale_agent_plugin_server_accounts{state="ACTIVE"} 2',
      'scale_agent_plugin_server_cached_objects{account="dev",kind="Deployment.apps"} 1',
      'scale_agent_plugin_server_change_lag_seconds_bucket',
      'scale_agent_plugin_server_store_write_seconds_bucket{le="0.0005",store="memory"}',
    ]) {
      expect(text).toContain(name);
    }
  });
});
