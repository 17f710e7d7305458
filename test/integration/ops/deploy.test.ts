import { describe, expect, it } from 'vitest';
import { createNamespace, kubectl } from '../../infra/index.js';
import { customResourceDefinition, replicaSet } from '../../infra/manifests.js';
import {
  adminKube,
  deployment,
  eventually,
  exists,
  expectOk,
  getJson,
  runOne,
  runOps,
  stageContext,
  type Obj,
} from './helpers.js';

const ACCOUNT = 'k8s-local';

describe('deployManifest against the real API server', () => {
  const kc = adminKube();
  /** deployManifest through ACCOUNT, in an Orca stage's context. */
  const deployStage = (description: Record<string, unknown>) =>
    runOne(kc, 'deployManifest', stageContext({ account: ACCOUNT, ...description }));

  it('deploys a Deployment + Service + ConfigMap with server-side apply as scale-agent', async () => {
    const ns = await createNamespace('ops-deploy');
    const r = expectOk(
      await deployStage({
        moniker: { app: 'shop' },
        namespaceOverride: ns,
        source: 'text',
        manifests: [
          deployment('web', { app: 'web' }),
          {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'web' },
            spec: { selector: { app: 'web' }, ports: [{ port: 80 }] },
          },
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'web-cfg' }, data: { a: '1' } },
        ],
      }),
    );
    const result = r.result as Obj;
    // Deploy priority: configMap (50) → service (70) → deployment (100); ConfigMaps are versioned.
    expect(result.manifestNamesByNamespace).toEqual({
      [ns]: ['configMap web-cfg-v000', 'service web', 'deployment web'],
    });
    expect(result.createdArtifacts.map((a: { reference: string }) => a.reference)).toEqual([
      'web-cfg-v000',
      'web',
      'web',
    ]);
    expect(result.manifests[2].metadata.generation).toBe(1);
    const d = await getJson(['deployment', 'web', '-n', ns, '--show-managed-fields']);
    const managers = d.metadata.managedFields.map(
      (f: { manager: string; operation: string }) => `${f.manager}/${f.operation}`,
    );
    expect(managers).toContain('scale-agent/Apply');
    expect(d.metadata.annotations).toMatchObject({
      'moniker.spinnaker.io/application': 'shop',
      'moniker.spinnaker.io/cluster': 'deployment web',
      'artifact.spinnaker.io/type': 'kubernetes/deployment',
      'artifact.spinnaker.io/name': 'web',
      'artifact.spinnaker.io/location': ns,
    });
    expect(d.metadata.labels).toMatchObject({
      'app.kubernetes.io/name': 'shop',
      'app.kubernetes.io/managed-by': 'spinnaker',
    });
    expect(d.spec.template.metadata.annotations['moniker.spinnaker.io/application']).toBe('shop');
    // The controller writes status right after the apply; the reported version is the one the apply produced.
    expect(r.resourceVersions[`apps/v1/Deployment/${ns}/web`]).toBe(result.manifests[2].metadata.resourceVersion);
    expect(Number(d.metadata.resourceVersion)).toBeGreaterThanOrEqual(
      Number(result.manifests[2].metadata.resourceVersion),
    );
    const cm = await getJson(['configmap', 'web-cfg-v000', '-n', ns]);
    expect(cm.metadata.labels['moniker.spinnaker.io/sequence']).toBe('0');
    expect(r.resourceVersions[`v1/ConfigMap/${ns}/web-cfg-v000`]).toBe(cm.metadata.resourceVersion);
  });

  it('versions ConfigMaps and ReplicaSets (-v000, -v001), reuses an identical version and binds the new name', async () => {
    const ns = await createNamespace('ops-version');
    const cm = (value: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'settings' },
      data: { value },
    });
    const rs = (image: string) =>
      replicaSet('api', { app: 'api' }, 0, {
        containers: [{ name: 'api', image, envFrom: [{ configMapRef: { name: 'settings' } }] }],
      });
    const deploy = (value: string, image: string) =>
      deployStage({
        moniker: { app: 'api' },
        namespaceOverride: ns,
        manifests: [rs(image), cm(value)],
        requiredArtifacts: [{ type: 'docker/image', name: 'ghcr.io/acme/api', reference: image }],
        optionalArtifacts: [],
      });
    const first = expectOk(await deploy('a', 'ghcr.io/acme/api:1.0.0')).result as Obj;
    expect(first.manifestNamesByNamespace[ns]).toEqual(['configMap settings-v000', 'replicaSet api-v000']);
    const again = expectOk(await deploy('a', 'ghcr.io/acme/api:1.0.0')).result as Obj;
    expect(again.manifestNamesByNamespace[ns]).toEqual(['configMap settings-v000', 'replicaSet api-v000']);
    const second = expectOk(await deploy('b', 'ghcr.io/acme/api:1.1.0')).result as Obj;
    expect(second.manifestNamesByNamespace[ns]).toEqual(['configMap settings-v001', 'replicaSet api-v001']);
    expect(second.boundArtifacts.map((a: { reference: string }) => a.reference).sort()).toEqual([
      'ghcr.io/acme/api:1.1.0',
      'settings-v001',
    ]);

    const live = await getJson(['replicaset', 'api-v001', '-n', ns]);
    expect(live.spec.template.spec.containers[0].image).toBe('ghcr.io/acme/api:1.1.0');
    expect(live.spec.template.spec.containers[0].envFrom[0].configMapRef.name).toBe('settings-v001');
    expect(live.metadata.annotations).toMatchObject({
      'artifact.spinnaker.io/version': 'v001',
      'moniker.spinnaker.io/sequence': '1',
      'moniker.spinnaker.io/cluster': 'replicaSet api',
    });
    expect(await exists(['replicaset', 'api-v000', '-n', ns])).toBe(true);
    expect(await exists(['configmap', 'settings-v002', '-n', ns])).toBe(false);
  });

  it('fails before writing anything when a required artifact cannot be bound', async () => {
    const ns = await createNamespace('ops-unbound');
    const r = await runOne(kc, 'deployManifest', {
      account: ACCOUNT,
      moniker: { app: 'x' },
      namespaceOverride: ns,
      manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, data: {} }, deployment('x')],
      requiredArtifacts: [{ type: 'docker/image', name: 'ghcr.io/acme/missing', reference: 'ghcr.io/acme/missing:1' }],
    });
    expect(r.ok).toBe(false);
    expect(r.error).toContain('required artifacts could not be bound');
    expect(await exists(['configmap', 'c-v000', '-n', ns])).toBe(false);
  });

  it('expands kind: List and deploys a CRD with its custom resource in one request', async () => {
    const ns = await createNamespace('ops-crd');
    const group = `${ns}.example.com`;
    const r = expectOk(
      await deployStage({
        moniker: { app: 'crons' },
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'List',
            items: [
              {
                apiVersion: 'stable.example.com/v1',
                kind: 'CronTab',
                metadata: { name: 'nightly', namespace: ns },
                spec: { cronSpec: '0 3 * * *' },
              },
            ].map((x) => ({ ...x, apiVersion: `${group}/v1` })),
          },
          customResourceDefinition({
            group,
            kind: 'CronTab',
            plural: 'crontabs',
            schema: {
              type: 'object',
              properties: { spec: { type: 'object', properties: { cronSpec: { type: 'string' } } } },
            },
          }),
        ],
      }),
    );
    const result = r.result as Obj;
    expect(result.manifestNamesByNamespace).toEqual({
      '': [`customResourceDefinition crontabs.${group}`],
      [ns]: [`CronTab.${group} nightly`],
    });
    const cr = await getJson([`crontabs.${group}`, 'nightly', '-n', ns]);
    expect(cr.spec.cronSpec).toBe('0 3 * * *');
    expect(cr.metadata.annotations['artifact.spinnaker.io/type']).toBe(`kubernetes/CronTab.${group}`);
    await kubectl(['delete', 'crd', `crontabs.${group}`, '--wait=false']);
  });

  it('applies client-side when a manifest asks for it (last-applied kept, removed keys removed)', async () => {
    const ns = await createNamespace('ops-csa');
    const cm = (data: Record<string, string>) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: 'plain',
        annotations: { 'scale-agent.io/apply-mode': 'client-side', 'strategy.spinnaker.io/versioned': 'false' },
      },
      data,
    });
    expectOk(
      await runOne(kc, 'deployManifest', {
        account: ACCOUNT,
        moniker: { app: 'csa' },
        namespaceOverride: ns,
        manifests: [cm({ a: '1', b: '2' })],
      }),
    );
    expectOk(
      await runOne(kc, 'deployManifest', {
        account: ACCOUNT,
        moniker: { app: 'csa' },
        namespaceOverride: ns,
        manifests: [cm({ a: '3' })],
      }),
    );
    const live = await getJson(['configmap', 'plain', '-n', ns, '--show-managed-fields']);
    expect(live.data).toEqual({ a: '3' });
    expect(JSON.parse(live.metadata.annotations['kubectl.kubernetes.io/last-applied-configuration']).data).toEqual({
      a: '3',
    });
    expect(live.metadata.managedFields.map((f: { operation: string }) => f.operation)).not.toContain('Apply');
  });

  it('honours the request-level applyMode; a manifest annotation still wins over it', async () => {
    const ns = await createNamespace('ops-applymode');
    const cm = (name: string, annotations: Record<string, string> = {}) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, annotations: { 'strategy.spinnaker.io/versioned': 'false', ...annotations } },
      data: { a: '1' },
    });
    const deploy = (applyMode: string) =>
      runOne(kc, 'deployManifest', {
        account: ACCOUNT,
        moniker: { app: 'applymode' },
        namespaceOverride: ns,
        applyMode,
        manifests: [
          cm('by-request'),
          cm('by-spinnaker-annotation', { 'strategy.spinnaker.io/server-side-apply': 'true' }),
          cm('by-our-annotation', { 'scale-agent.io/apply-mode': 'server-side' }),
        ],
      });
    const how = async (name: string) => {
      const live = await getJson(['configmap', name, '-n', ns, '--show-managed-fields']);
      return {
        lastApplied: 'kubectl.kubernetes.io/last-applied-configuration' in live.metadata.annotations,
        operations: live.metadata.managedFields.map((f: { manager: string; operation: string }) => f.operation),
      };
    };
    expectOk(await deploy('client-side'));
    // The request asked for client-side apply: a merge patch/create with the last applied configuration, no Apply.
    expect(await how('by-request')).toEqual({ lastApplied: true, operations: ['Update'] });
    // Per-manifest annotations keep priority over the request, as Clouddriver gives them.
    expect(await how('by-spinnaker-annotation')).toEqual({ lastApplied: false, operations: ['Apply'] });
    expect(await how('by-our-annotation')).toEqual({ lastApplied: false, operations: ['Apply'] });

    const bad = await runOps(kc, [
      { deployManifest: { account: ACCOUNT, applyMode: 'sideways', manifests: [cm('x')] } },
    ]).then(
      () => 'accepted',
      (e: Error) => e.message,
    );
    expect(bad).toContain('applyMode must be "server-side" or "client-side"');
  });

  it('runJob creates a Job (a new one per run) and reports its status as the API shows it', async () => {
    const ns = await createNamespace('ops-job');
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { generateName: 'pi-' },
      spec: {
        template: {
          spec: {
            restartPolicy: 'Never',
            containers: [{ name: 'pi', image: 'perl', command: ['perl', '-e', 'print 1'] }],
          },
        },
      },
    };
    const body = {
      credentials: ACCOUNT,
      cloudProvider: 'kubernetes',
      application: 'calc',
      namespace: ns,
      source: 'text',
      propertyFile: 'pi',
      consumeArtifactSource: 'none',
      manifest: job,
    };
    const first = expectOk(await runOne(kc, 'runJob', body)).result as Obj;
    const second = expectOk(await runOne(kc, 'runJob', body)).result as Obj;
    const [name1] = first.deployedNamesByLocation[ns];
    const [name2] = second.deployedNamesByLocation[ns];
    expect(name1).toMatch(/^job pi-/);
    expect(name2).not.toBe(name1);
    expect(first.jobStatus).toMatchObject({
      jobState: 'Running',
      account: ACCOUNT,
      location: ns,
      provider: 'kubernetes',
    });
    const live = await getJson(['job', name1.slice(4), '-n', ns]);
    expect(live.metadata.annotations['moniker.spinnaker.io/application']).toBe('calc');
    // No kubelet here: the job controller creates a pod that never runs; the Job stays active, never succeeded.
    const status = await eventually(
      () => getJson(['job', name1.slice(4), '-n', ns]),
      (j) => (j.status?.active ?? 0) >= 1,
    );
    expect(status.status.succeeded ?? 0).toBe(0);
  });

  it('cleanupArtifacts keeps the newest max-version-history versions and deletes the rest', async () => {
    const ns = await createNamespace('ops-cleanup');
    const cm = (value: string) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'flags', annotations: { 'strategy.spinnaker.io/max-version-history': '2' } },
      data: { value },
    });
    let last: Obj = {};
    for (const v of ['a', 'b', 'c']) {
      last = expectOk(
        await runOne(kc, 'deployManifest', {
          account: ACCOUNT,
          moniker: { app: 'f' },
          namespaceOverride: ns,
          manifests: [cm(v)],
        }),
      ).result as Obj;
    }
    expect(last.manifestNamesByNamespace[ns]).toEqual(['configMap flags-v002']);
    const r = expectOk(
      await runOne(kc, 'cleanupArtifacts', {
        account: ACCOUNT,
        cloudProvider: 'kubernetes',
        manifests: last.manifests,
      }),
    );
    expect(r.result).toEqual({
      manifestNamesByNamespace: { [ns]: ['configMap flags-v000'] },
      createdArtifacts: [],
      boundArtifacts: [],
    });
    expect(await exists(['configmap', 'flags-v000', '-n', ns])).toBe(false);
    expect(await exists(['configmap', 'flags-v001', '-n', ns])).toBe(true);
    expect(await exists(['configmap', 'flags-v002', '-n', ns])).toBe(true);
  });
});
