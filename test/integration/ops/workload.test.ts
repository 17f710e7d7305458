import { describe, expect, it } from 'vitest';
import { executeOperation, executeWireOperation } from '../../../src/agent/ops/index.js';
import type { Operation as WireOperation } from '../../../src/shared/proto.js';
import { parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import { createNamespace, createServiceAccount } from '../../infra/index.js';
import { replicaSet } from '../../infra/manifests.js';
import {
  adminKube,
  deployment,
  eventually,
  expectOk,
  getJson,
  kubeClient,
  runOne,
  type Kube,
  type Obj,
} from './helpers.js';

const ACCOUNT = 'k8s-local';

async function deploy(kc: Kube, ns: string, manifests: object[], extra: Obj = {}) {
  return runOne(kc, 'deployManifest', {
    account: ACCOUNT,
    moniker: { app: 'shop' },
    namespaceOverride: ns,
    manifests,
    ...extra,
  });
}

async function revisions(ns: string, app: string): Promise<Map<string, Obj>> {
  const list = await getJson<{ items: Obj[] }>(['replicasets', '-n', ns, '-l', `app=${app}`]);
  return new Map(
    list.items.map((rs) => [rs.metadata.annotations?.['deployment.kubernetes.io/revision'] as string, rs]),
  );
}

describe('workload operations against the real API server', () => {
  const kc = adminKube();

  it('scales a Deployment through the scale subresource', async () => {
    const ns = await createNamespace('ops-scale');
    expectOk(await deploy(kc, ns, [deployment('web')]));
    const r = expectOk(
      await runOne(kc, 'scaleManifest', {
        account: ACCOUNT,
        location: ns,
        manifestName: 'deployment web',
        replicas: '4',
        cloudProvider: 'kubernetes',
        app: 'shop',
      }),
    );
    expect(r.result).toBeNull();
    const d = await getJson(['deployment', 'web', '-n', ns]);
    expect(d.spec.replicas).toBe(4);
    expect(Number(d.metadata.resourceVersion)).toBeGreaterThanOrEqual(
      Number(r.resourceVersions[`apps/v1/Deployment/${ns}/web`]),
    );
    const denied = await runOne(kc, 'scaleManifest', {
      account: ACCOUNT,
      location: ns,
      manifestName: 'service web',
      replicas: 1,
    });
    expect(denied.ok).toBe(false);
    expect(denied.error).toContain('does not support scale');
  });

  it('undoes a rollout to a given revision', async () => {
    const ns = await createNamespace('ops-undo');
    expectOk(await deploy(kc, ns, [deployment('web', { app: 'web' }, 'nginx:1.25')]));
    await eventually(
      () => revisions(ns, 'web'),
      (m) => m.has('1'),
    );
    expectOk(await deploy(kc, ns, [deployment('web', { app: 'web' }, 'nginx:1.26')]));
    await eventually(
      () => revisions(ns, 'web'),
      (m) => m.has('2'),
    );
    const r = expectOk(
      await runOne(kc, 'undoRolloutManifest', {
        account: ACCOUNT,
        location: ns,
        manifestName: 'deployment web',
        revision: 1,
      }),
    );
    expect(r.result).toBeNull();
    const d = await getJson(['deployment', 'web', '-n', ns]);
    expect(d.spec.template.spec.containers[0].image).toBe('nginx:1.25');
    // The controller re-adopts the old ReplicaSet as the newest revision.
    const after = await eventually(
      () => revisions(ns, 'web'),
      (m) => m.get('3')?.spec.template.spec.containers[0].image === 'nginx:1.25',
    );
    expect(after.get('3')?.spec.template.spec.containers[0].image).toBe('nginx:1.25');
    const missing = await runOne(kc, 'undoRolloutManifest', {
      account: ACCOUNT,
      location: ns,
      manifestName: 'deployment web',
      revision: 42,
    });
    expect(missing.ok).toBe(false);
    expect(missing.error).toContain('revision 42');
  });

  it('pauses and resumes a rollout (spec.paused) and restarts it (restartedAt on the pod template)', async () => {
    const ns = await createNamespace('ops-rollout');
    expectOk(await deploy(kc, ns, [deployment('web')]));
    expectOk(
      await runOne(kc, 'pauseRolloutManifest', { account: ACCOUNT, location: ns, manifestName: 'deployment web' }),
    );
    expect((await getJson(['deployment', 'web', '-n', ns])).spec.paused).toBe(true);
    expectOk(await runOne(kc, 'resumeRolloutManifest', { account: ACCOUNT, location: ns, manifestName: 'deploy web' }));
    expect((await getJson(['deployment', 'web', '-n', ns])).spec.paused ?? false).toBe(false);
    await eventually(
      () => revisions(ns, 'web'),
      (m) => m.has('1'),
    );
    expectOk(
      await runOne(kc, 'rollingRestartManifest', { account: ACCOUNT, location: ns, manifestName: 'deployment web' }),
    );
    const d = await getJson(['deployment', 'web', '-n', ns]);
    expect(Date.parse(d.spec.template.metadata.annotations['kubectl.kubernetes.io/restartedAt'])).toBeGreaterThan(0);
    const after = await eventually(
      () => revisions(ns, 'web'),
      (m) => m.has('2'),
    );
    expect(after.size).toBe(2);
  });

  it('enables and disables a ReplicaSet behind a Service: template labels and pods follow', async () => {
    const ns = await createNamespace('ops-traffic');
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      spec: { selector: { frontedBy: 'web' }, ports: [{ port: 80 }] },
    };
    const rs = replicaSet('web', { app: 'web' }, 2, { containers: [{ name: 'c', image: 'nginx' }] });
    const r = expectOk(await deploy(kc, ns, [service, rs], { services: ['service web'], enableTraffic: true }));
    expect((r.result as Obj).manifestNamesByNamespace[ns]).toEqual(['service web', 'replicaSet web-v000']);
    let live = await getJson(['replicaset', 'web-v000', '-n', ns]);
    expect(live.spec.template.metadata.labels.frontedBy).toBe('web');
    expect(live.metadata.annotations['traffic.spinnaker.io/load-balancers']).toBe('["service web"]');
    const pods = () => getJson<{ items: Obj[] }>(['pods', '-n', ns, '-l', 'app=web']);
    await eventually(pods, (l) => l.items.length === 2);

    expectOk(
      await runOne(kc, 'disableManifest', {
        account: ACCOUNT,
        location: ns,
        manifestName: 'replicaSet web-v000',
        cloudProvider: 'kubernetes',
      }),
    );
    live = await getJson(['replicaset', 'web-v000', '-n', ns]);
    expect(live.spec.template.metadata.labels.frontedBy).toBeUndefined();
    expect((await pods()).items.map((p) => p.metadata.labels.frontedBy)).toEqual([undefined, undefined]);

    expectOk(
      await runOne(kc, 'enableManifest', {
        account: ACCOUNT,
        location: ns,
        manifestName: 'replicaSet web-v000',
        loadBalancers: ['service web'],
      }),
    );
    live = await getJson(['replicaset', 'web-v000', '-n', ns]);
    expect(live.spec.template.metadata.labels.frontedBy).toBe('web');
    expect((await pods()).items.map((p) => p.metadata.labels.frontedBy)).toEqual(['web', 'web']);
  });

  it('a read-only account gets a Forbidden failure naming the verb and the resource', async () => {
    const ns = await createNamespace('ops-forbidden');
    expectOk(await deploy(kc, ns, [deployment('web')]));
    const sa = await createServiceAccount({
      namespace: ns,
      name: 'viewer',
      rules: [{ apiGroups: ['', 'apps', 'batch'], resources: ['*'], verbs: ['get', 'list', 'watch'] }],
    });
    const ro: Kube = { kubeconfigFile: sa.kubeconfigPath };

    const deployed = await deploy(ro, ns, [deployment('web')]);
    expect(deployed.ok).toBe(false);
    expect(deployed.errorCode).toBe('SA_ERR_FORBIDDEN');
    expect(deployed.error).toContain(`cannot patch deployments.apps "web" in namespace "${ns}"`);
    expect(deployed.result).toMatchObject({ type: 'EXCEPTION', operation: 'KubernetesDeployManifestOperation' });

    const scaled = await runOne(ro, 'scaleManifest', {
      account: ACCOUNT,
      location: ns,
      manifestName: 'deployment web',
      replicas: 3,
    });
    expect(scaled.errorCode).toBe('SA_ERR_FORBIDDEN');
    expect(scaled.error).toContain('cannot patch deployments.apps/scale "web"');

    const deleted = await runOne(ro, 'deleteManifest', {
      account: ACCOUNT,
      location: ns,
      manifestName: 'deployment web',
    });
    expect(deleted.error).toContain('cannot delete deployments.apps "web"');
    // Nothing changed.
    const d = await getJson(['deployment', 'web', '-n', ns]);
    expect(d.spec.replicas).toBe(1);
    // Live reads are allowed.
    const read = expectOk(
      await executeOperation(await kubeClient(ro), {
        type: 'liveGet',
        account: ACCOUNT,
        payload: { target: { location: ns, kind: 'deployment', name: 'web' } },
      }),
    );
    expect((read.result as Obj).manifest.metadata.name).toBe('web');
    const list = expectOk(
      await executeOperation(await kubeClient(ro), {
        type: 'liveList',
        account: ACCOUNT,
        payload: { location: ns, kind: 'deploy' },
      }),
    );
    expect((list.result as Obj).items.map((i: Obj) => `${i.kind}/${i.metadata.name}`)).toEqual(['Deployment/web']);
  });
});

describe('the stream integration point', () => {
  it('executeWireOperation runs a ServerMessage.operation and answers an OperationResult', async () => {
    const ns = await createNamespace('ops-wire');
    const parsed = parseOperations(
      [
        {
          deployManifest: {
            account: ACCOUNT,
            moniker: { app: 'wire' },
            namespaceOverride: ns,
            manifests: [deployment('web')],
          },
        },
      ],
      { endpoint: 'kubernetes' },
    );
    if (!parsed.ok) throw new Error('parse failed');
    const op = parsed.operations[0] as { type: string; account: string; payload: unknown };
    const res = await executeWireOperation(await kubeClient(adminKube()), {
      operationId: 'op-1',
      account: op.account,
      type: op.type,
      payloadJson: Buffer.from(JSON.stringify(op.payload)),
      deadlineMs: Date.now() + 30_000,
      sentBeforeOnSessions: [],
    });
    expect(res.operationId).toBe('op-1');
    expect(res.ok).toBe(true);
    expect(res.error).toBe('');
    const body = JSON.parse(Buffer.from(res.resultJson).toString('utf8')) as Obj;
    expect(body.result.manifestNamesByNamespace).toEqual({ [ns]: ['deployment web'] });
    expect(Object.keys(res.resourceVersions)).toEqual([`apps/v1/Deployment/${ns}/web`]);

    // Only normalized payloads with an absolute deadline: a raw Clouddriver description, a deadline already passed
    // and an unknown type are refused, each changing nothing.
    const scale = { target: { location: ns, kind: 'deployment', name: 'web' }, replicas: 2 };
    const refused = async (msg: Partial<WireOperation>): Promise<Obj> => {
      const r = await executeWireOperation(await kubeClient(adminKube()), {
        operationId: 'op-2',
        account: ACCOUNT,
        type: 'scaleManifest',
        payloadJson: Buffer.from(JSON.stringify(scale)),
        deadlineMs: Date.now() + 30_000,
        sentBeforeOnSessions: [],
        ...msg,
      });
      expect(r.ok).toBe(false);
      return { error: r.error, ...(JSON.parse(Buffer.from(r.resultJson).toString('utf8')) as Obj) };
    };
    const raw = await refused({
      payloadJson: Buffer.from(JSON.stringify({ location: ns, manifestName: 'deployment web', replicas: 2 })),
    });
    expect(raw.error).toContain('is not a normalized scaleManifest payload: it lacks target');
    expect(raw.errorCode).toBe('SA_ERR_INVALID_INPUT');
    const late = await refused({ deadlineMs: Date.now() - 1000 });
    expect(late.error).toMatch(/its deadline passed \d+ ms before it could start/);
    expect(late).toMatchObject({ errorCode: 'SA_ERR_TIMEOUT', retryable: true });
    const unknown = await refused({ type: 'explode', payloadJson: Buffer.from('{}') });
    expect(unknown.error).toContain('unknown operation type');
    expect((await getJson(['deployment', 'web', '-n', ns])).spec.replicas).toBe(1);
  });
});
