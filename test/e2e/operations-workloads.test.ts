/**
 * Every Clouddriver operation through the real plugin-server and agent (memory store): synchronous validation,
 * both endpoints, clientRequestId idempotency, the cache endpoints, the admin view, delete by label selector,
 * rollouts (undo, pause, resume, restart) with the Deployment status Clouddriver reports, traffic, runJob and a CRD
 * with its custom resource (read live: the agent does not cache the new kind).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl } from '../infra/index.js';
import type { PluginServerProcess } from '../infra/processes.js';
import { startStack, type Stack } from '../infra/stack.js';
import { fixture, OpsClient, type Obj } from './operations-helpers.js';

async function getJson(args: string[]): Promise<Obj> {
  const { stdout } = await kubectl(['get', ...args, '-o', 'json']);
  return JSON.parse(stdout) as Obj;
}

async function exists(args: string[]): Promise<boolean> {
  return (await kubectl(['get', ...args, '--ignore-not-found', '-o', 'name'])).stdout.trim() !== '';
}

/** Polls until `ok` holds (controllers and the watch run asynchronously); returns the last value. */
async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let v = await read();
  while (!ok(v) && Date.now() < until) {
    await sleep(50);
    v = await read();
  }
  return v;
}

const deployment = (name: string, replicas: number, image: string, labels: Record<string, string> = {}) => ({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name, labels },
  spec: {
    replicas,
    selector: { matchLabels: { app: name } },
    template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image }] } },
  },
});

describe('operations: every Clouddriver operation (memory store)', () => {
  let stack: Stack;
  let ns: string;
  let other: string;
  let server: PluginServerProcess;
  let ops: OpsClient;
  const account = 'ops-all';
  const group = `ops${Math.random().toString(36).slice(2, 8)}.example.com`;

  beforeAll(async () => {
    stack = await startStack({ name: 'ops-all', store: 'memory', agent: { accounts: [{ name: account }] } });
    ({ ns, server } = stack);
    // Not the account's: operations that name it are refused.
    other = await stack.addNamespace('ops-other');
    stack.defer(() => kubectl(['delete', 'crd', `crontabs.${group}`, '--wait=false'], { allowFail: true }));
    ops = new OpsClient(server);
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const deploy = (manifests: object[], extra: Obj = {}) => [
    {
      deployManifest: {
        account,
        cloudProvider: 'kubernetes',
        moniker: { app: 'shop' },
        namespaceOverride: ns,
        manifests,
        ...extra,
      },
    },
  ];

  it('refuses bad requests synchronously with 400 and an errors array, creating no task', async () => {
    const unknown = await ops.post('/kubernetes/ops', [
      { deployManifest: { account: 'nobody', moniker: { app: 'x' }, manifests: [deployment('x', 1, 'nginx')] } },
    ]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors).toEqual([expect.stringContaining('credentials not found (name: nobody)')]);
    expect(unknown.body.message).toBe('Validation Failed');

    const wrongNs = await ops.post('/kubernetes/ops', [
      {
        deployManifest: {
          account,
          moniker: { app: 'x' },
          namespaceOverride: other,
          manifests: [deployment('x', 1, 'nginx')],
        },
      },
    ]);
    expect(wrongNs.status).toBe(400);
    expect(wrongNs.body.errors).toEqual([expect.stringContaining('wrongNamespace')]);

    const malformed = await ops.post(
      '/kubernetes/ops',
      deploy([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: {} }]),
    );
    expect(malformed.status).toBe(400);
    expect(malformed.body.errors[0]).toMatch(/manifests\[0\]\.metadata/);

    const notAList = await ops.post('/kubernetes/ops', { deployManifest: {} });
    expect(notAList.status).toBe(400);
    expect(await exists(['deployment', 'x', '-n', ns])).toBe(false);
    expect((await server.get('/task/does-not-exist')).status).toBe(404);
  });

  it('POST /ops (cloudProvider in each description) and the single-operation form work like /kubernetes/ops', async () => {
    const r = await ops.post('/ops', [
      {
        deployManifest: {
          account,
          cloudProvider: 'kubernetes',
          moniker: { app: 'shop' },
          namespaceOverride: ns,
          manifests: [deployment('via-ops', 0, 'nginx:1')],
        },
      },
    ]);
    expect(r.status).toBe(200);
    const t = await ops.waitTask(r.body.id as string);
    expect(t.status.failed).toBe(false);
    expect((await ops.manifest(account, ns, 'deployment via-ops')).status).toBe(200);

    const single = await ops.post('/kubernetes/ops/scaleManifest', {
      account,
      location: ns,
      manifestName: 'deployment via-ops',
      replicas: '3',
    });
    expect(single.status).toBe(200);
    const scaled = await ops.waitTask(single.body.id as string);
    expect(scaled.status.failed).toBe(false);
    expect(scaled.resultObjects).toEqual([]);
    expect((await ops.manifest(account, ns, 'deployment via-ops')).body.manifest.spec.replicas).toBe(3);
  });

  it('a repeated POST with the same clientRequestId returns the same task and runs nothing twice', async () => {
    const body = deploy([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'idem' }, data: { a: '1' } }], {
      versioned: false,
    });
    const requestId = `req-${Math.random().toString(36).slice(2)}`;
    const ids = await Promise.all(Array.from({ length: 5 }, () => ops.submit(body, requestId)));
    expect(new Set(ids).size).toBe(1);
    const t = await ops.waitTask(ids[0]!);
    expect(t.status.failed).toBe(false);
    expect(t.requestId).toBe(requestId);
    const rv = (await getJson(['configmap', 'idem', '-n', ns])).metadata.resourceVersion as string;
    expect(await ops.submit(body, requestId)).toBe(ids[0]);
    const op = await server.get<Obj>(`/armory/agent/operations/${ids[0]!}.0`);
    expect(op.body).toMatchObject({ attempts: 1, state: 'succeeded', agentId: 'agent-1', ok: true });
    expect(op.body.sentAt).toBeGreaterThan(0);
    expect(op.body.durationMs).toBeGreaterThanOrEqual(0);
    expect((await getJson(['configmap', 'idem', '-n', ns])).metadata.resourceVersion).toBe(rv);
    expect((await server.get<unknown[]>('/armory/agent/operations')).body).toEqual([]);
  });

  it('writes one audit line per operation: who asked, what, which account, the result', async () => {
    const body = deploy([{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'audited' }, data: { a: '1' } }], {
      versioned: false,
    });
    const id = await ops.submit(body);
    const t = await ops.waitTask(id);
    expect(t.status.failed).toBe(false);
    const lines = await eventually(
      async () =>
        readFileSync(server.logFile, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"audit":true') && l.includes(id))
          .map((l) => JSON.parse(l) as Obj),
      (ls) => ls.length > 0,
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      who: 'anonymous', // no admin auth configured in this test
      what: 'operation deployManifest',
      account,
      result: 'succeeded',
      task: id,
    });
  });

  it('force cache refresh is free: POST answers 200 with nothing pending, GET lists nothing', async () => {
    const post = await ops.post('/cache/kubernetes/manifest', { account, location: ns, name: 'deployment web' });
    expect(post).toEqual({ status: 200, body: { cachedIdentifiersByType: {} } });
    expect(await server.get('/cache/kubernetes/manifest')).toEqual({ status: 200, body: [] });
    // Tasks so far show up in the operation metrics.
    expect(
      await server.metric('scale_agent_plugin_server_operations_total{type="deployManifest",result="succeeded"}'),
    ).toBeGreaterThan(0);
  });

  it('deletes by label selector with cascading foreground (Orca payload)', async () => {
    const labels = { tier: 'frontend', app: 'sel' };
    await ops.run(
      deploy(
        [
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'sel-cfg', labels }, data: { a: '1' } },
          deployment('sel-web', 0, 'nginx:1', labels),
          deployment('sel-keep', 0, 'nginx:1', { tier: 'frontend', app: 'sel', track: 'canary' }),
        ],
        { versioned: false },
      ),
    );
    const t = await ops.run(fixture('delete-label-selector.json', account, ns));
    expect(t.resultObjects[0]?.manifestNamesByNamespace[ns]).toEqual(
      expect.arrayContaining(['deployment sel-web', 'configMap sel-cfg']),
    );
    expect(await exists(['deployment', 'sel-web', '-n', ns])).toBe(false);
    expect(await exists(['configmap', 'sel-cfg', '-n', ns])).toBe(false);
    expect(await exists(['deployment', 'sel-keep', '-n', ns])).toBe(true);
    // The barrier covers deletions too: the cache no longer holds them.
    expect((await ops.manifest(account, ns, 'deployment sel-web')).status).toBe(404);
    expect((await ops.manifest(account, ns, 'configMap sel-cfg')).status).toBe(404);
  });

  it('Deployment status moves stable/paused/available through rollout, pause and resume; undo and restart', async () => {
    const name = 'roll';
    const status = async () => (await ops.manifest(account, ns, `deployment ${name}`)).body;
    await ops.run(deploy([deployment(name, 0, 'registry.example.com/roll:1')]));
    let s = await eventually(status, (b) => b.status.stable.state === true);
    expect(s.status).toEqual({
      stable: { state: true },
      paused: { state: false },
      available: { state: true },
      failed: { state: false },
    });

    await ops.run([
      {
        pauseRolloutManifest: {
          account,
          cloudProvider: 'kubernetes',
          location: ns,
          manifestName: `deployment ${name}`,
        },
      },
    ]);
    expect((await status()).manifest.spec.paused).toBe(true);
    s = await eventually(status, (b) => b.status.paused.state === true);
    expect(s.status.paused.state).toBe(true);

    await ops.run([{ resumeRolloutManifest: { account, location: ns, manifestName: `deployment ${name}` } }]);
    expect((await status()).manifest.spec.paused).toBeFalsy();
    s = await eventually(status, (b) => b.status.paused.state === false && b.status.stable.state === true);
    expect(s.status.paused.state).toBe(false);

    // No kubelet runs here: two replicas are never available, which Clouddriver reports as unstable.
    await ops.run([{ scaleManifest: { account, location: ns, manifestName: `deployment ${name}`, replicas: 2 } }]);
    s = await eventually(status, (b) => b.status.stable.message === 'Waiting for all replicas to be available');
    expect(s.status.stable.state).toBe(false);
    expect(s.status.failed.state).toBe(false);

    await ops.run(deploy([deployment(name, 2, 'registry.example.com/roll:2')]));
    await eventually(
      () => getJson(['deployment', name, '-n', ns]),
      (d) => d.metadata.annotations['deployment.kubernetes.io/revision'] === '2',
    );
    await ops.run([
      { undoRolloutManifest: { account, location: ns, manifestName: `deployment ${name}`, revision: 1 } },
    ]);
    const undone = await getJson(['deployment', name, '-n', ns]);
    expect(undone.spec.template.spec.containers[0].image).toBe('registry.example.com/roll:1');
    expect((await status()).manifest.spec.template.spec.containers[0].image).toBe('registry.example.com/roll:1');

    await ops.run([{ rollingRestartManifest: { account, location: ns, manifestName: `deployment ${name}` } }]);
    const restarted = await getJson(['deployment', name, '-n', ns]);
    expect(restarted.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']).toBeTruthy();
    expect((await status()).manifest.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt']).toBe(
      restarted.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt'],
    );
  });

  it('patches with strategic, merge and json patches', async () => {
    await ops.run(deploy([deployment('patched', 0, 'registry.example.com/p:1')]));
    const patch = (mergeStrategy: string, patchBody: unknown) => [
      {
        patchManifest: {
          account,
          location: ns,
          manifestName: 'deployment patched',
          options: { mergeStrategy, record: true },
          patchBody,
        },
      },
    ];
    const t = await ops.run(
      patch('strategic', {
        spec: { template: { spec: { containers: [{ name: 'main', image: 'registry.example.com/p:2' }] } } },
      }),
    );
    expect(t.resultObjects[0]?.manifestNamesByNamespace).toEqual({ [ns]: ['deployment patched'] });
    await ops.run(patch('merge', { metadata: { labels: { patched: 'merge' } } }));
    await ops.run(patch('json', [{ op: 'replace', path: '/spec/replicas', value: 4 }]));
    const d = await getJson(['deployment', 'patched', '-n', ns]);
    expect(d.spec.template.spec.containers[0].image).toBe('registry.example.com/p:2');
    expect(d.metadata.labels.patched).toBe('merge');
    expect(d.spec.replicas).toBe(4);
    expect((await ops.manifest(account, ns, 'deployment patched')).body.manifest.spec.replicas).toBe(4);
  });

  it('enables and disables traffic from a Service to a workload', async () => {
    await ops.run(
      deploy([
        {
          apiVersion: 'v1',
          kind: 'Service',
          metadata: { name: 'frontdoor' },
          spec: { selector: { lb: 'frontdoor' }, ports: [{ port: 80 }] },
        },
        deployment('backend', 0, 'nginx:1'),
      ]),
    );
    const target = { account, location: ns, manifestName: 'deployment backend', loadBalancers: ['service frontdoor'] };
    await ops.run([{ enableManifest: target }]);
    expect((await getJson(['deployment', 'backend', '-n', ns])).spec.template.metadata.labels.lb).toBe('frontdoor');
    expect((await ops.manifest(account, ns, 'deployment backend')).body.manifest.spec.template.metadata.labels.lb).toBe(
      'frontdoor',
    );
    await ops.run([{ disableManifest: target }]);
    expect((await getJson(['deployment', 'backend', '-n', ns])).spec.template.metadata.labels.lb).toBeUndefined();
  });

  it('runs a Job (Orca runJob with credentials and generateName) and reports where it went', async () => {
    const body = fixture('orca-stages.json', account, ns).filter((o) => 'runJob' in o);
    const t = await ops.run(body);
    const names = t.resultObjects[0]?.deployedNamesByLocation[ns] as string[];
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(/^job pi-/);
    const jobName = names[0]!.slice('job '.length);
    expect(await exists(['job', jobName, '-n', ns])).toBe(true);
    expect((await ops.manifest(account, ns, `job ${jobName}`)).status).toBe(200);
    // Orca's WaitOnJobCompletion: no kubelet runs here, so the Job stays Running.
    const status = await server.get<Obj>(
      `/applications/calc/jobs/${account}/${ns}/${encodeURIComponent(`job ${jobName}`)}`,
    );
    expect(status.status).toBe(200);
    expect(status.body).toMatchObject({
      name: jobName,
      account,
      location: ns,
      provider: 'kubernetes',
      jobState: 'Running',
    });
    const listed = await server.get<Obj[]>('/task?limit=5');
    expect(listed.body.map((x) => x.id)).toContain(t.id);
  });

  it('deploys a CRD and its custom resource (kind: List); the new kind is read live', async () => {
    const body = JSON.parse(
      JSON.stringify(fixture('deploy-crd.json', account, ns)).replaceAll('stable.example.com', group),
    ) as Obj[];
    const t = await ops.run(body);
    expect(t.resultObjects[0]?.manifestNamesByNamespace).toEqual({
      '': [`customResourceDefinition crontabs.${group}`],
      [ns]: [`CronTab.${group} nightly`],
    });
    expect(await exists([`crontabs.${group}`, 'nightly', '-n', ns])).toBe(true);
    const read = await ops.manifest(account, ns, `CronTab.${group} nightly`);
    expect(read.status).toBe(200);
    expect(read.body.manifest.spec.cronSpec).toBe('0 3 * * *');
  });
});
