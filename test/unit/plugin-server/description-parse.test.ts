import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatIssues, parseOperations, validateAccounts } from '../../../src/plugin-server/api/descriptions/index.js';
import { labelSelectorString, type NormalizedOperation } from '../../../src/shared/ops/index.js';

const fixture = (name: string): unknown =>
  JSON.parse(readFileSync(new URL(`../../fixtures/ops/${name}`, import.meta.url), 'utf8')) as unknown;

function ok(body: unknown, endpoint: 'kubernetes' | 'ops' = 'kubernetes'): NormalizedOperation[] {
  const r = parseOperations(body, { endpoint });
  if (!r.ok) throw new Error(formatIssues(r.errors).join('\n'));
  return r.operations;
}

function errors(body: unknown, endpoint: 'kubernetes' | 'ops' = 'kubernetes'): string[] {
  const r = parseOperations(body, { endpoint });
  if (r.ok) throw new Error('expected errors');
  return formatIssues(r.errors);
}

describe('parseOperations: Orca-shaped bodies', () => {
  it('reads a multi-document deploy (Deployment + Service + ConfigMap), ignoring the stage context and null documents', () => {
    const [op] = ok(fixture('deploy-multi-doc.json'));
    expect(op?.type).toBe('deployManifest');
    if (op?.type !== 'deployManifest') return;
    expect(op.account).toBe('k8s-prod');
    expect(op.payload.manifests.map((m) => `${m.kind}/${m.metadata.name}`)).toEqual([
      'ConfigMap/web-cfg',
      'Deployment/web',
      'Service/web',
    ]);
    expect(op.payload).toMatchObject({
      moniker: { app: 'shop' },
      namespaceOverride: 'shop',
      enableTraffic: true,
      services: [],
      enableArtifactBinding: true,
      skipSpecTemplateLabels: false,
      requiredArtifacts: [{ type: 'docker/image', name: 'ghcr.io/acme/web', reference: 'ghcr.io/acme/web:1.4.2' }],
    });
    expect(Object.keys(op.payload)).not.toContain('trafficManagement');
  });

  it('expands kind: List and keeps a CRD next to its custom resource', () => {
    const [op] = ok(fixture('deploy-crd.json'));
    if (op?.type !== 'deployManifest') throw new Error('not a deploy');
    expect(op.payload.manifests.map((m) => `${m.apiVersion}/${m.kind}`)).toEqual([
      'stable.example.com/v1/CronTab',
      'apiextensions.k8s.io/v1/CustomResourceDefinition',
    ]);
    expect(op.payload.moniker).toEqual({ app: 'crons', cluster: 'crons-main' });
  });

  it('reads a delete by label selector with foreground cascading and a string grace period', () => {
    const [op] = ok(fixture('delete-label-selector.json'));
    if (op?.type !== 'deleteManifest') throw new Error('not a delete');
    expect(op.payload).toEqual({
      location: 'shop',
      kinds: ['deployment', 'configMap'],
      labelSelectors: [
        { kind: 'EQUALS', key: 'tier', values: ['frontend'] },
        { kind: 'NOT_CONTAINS', key: 'track', values: ['canary', 'baseline'] },
        { kind: 'EXISTS', key: 'app', values: [] },
      ],
      propagationPolicy: 'Foreground',
      gracePeriodSeconds: 30,
      waitTimeoutMs: 60_000,
      warnings: [],
    });
    expect(labelSelectorString(op.payload.labelSelectors)).toBe('tier=frontend,track notin (canary,baseline),app');
  });

  it('reads every other stage: scale, patch (strategic and json@v1), undo, pause, resume, restart, disable, enable, runJob, resize', () => {
    const ops = ok(fixture('orca-stages.json'));
    expect(ops.map((o) => o.type)).toEqual([
      'scaleManifest',
      'patchManifest',
      'patchManifest',
      'undoRolloutManifest',
      'pauseRolloutManifest',
      'resumeRolloutManifest',
      'rollingRestartManifest',
      'disableManifest',
      'enableManifest',
      'runJob',
      'scaleManifest',
    ]);
    expect(ops[0]?.payload).toEqual({ target: { location: 'shop', kind: 'deployment', name: 'web' }, replicas: 5 });
    expect(ops[1]?.payload).toMatchObject({ strategy: 'strategic', record: true, patchBody: { spec: {} } });
    expect(ops[2]?.payload).toMatchObject({
      strategy: 'json',
      patchBody: [{ op: 'replace', path: '/spec/replicas', value: 3 }],
    });
    expect(ops[3]?.payload).toEqual({
      target: { location: 'shop', kind: 'deployment', name: 'web' },
      numRevisionsBack: 1,
    });
    expect(ops[8]?.payload).toEqual({
      target: { location: 'shop', kind: 'rs', name: 'web-v003' },
      loadBalancers: ['service web'],
    });
    expect(ops[9]).toMatchObject({
      account: 'k8s-prod',
      payload: { application: 'calc', namespace: 'jobs', manifest: { kind: 'Job' } },
    });
    expect(ops[10]?.payload).toEqual({
      target: { location: 'shop', kind: 'replicaSet', name: 'web-v003' },
      replicas: 4,
    });
  });

  it('maps the delete options as Clouddriver does: cascading true/false, orphanDependents first, bad grace periods ignored', () => {
    const del = (options: Record<string, unknown>) => {
      const [op] = ok([{ deleteManifest: { account: 'a', location: 'ns', manifestName: 'deployment web', options } }]);
      if (op?.type !== 'deleteManifest') throw new Error('not a delete');
      return op.payload;
    };
    expect(del({ cascading: true }).propagationPolicy).toBe('Background');
    expect(del({ cascading: 'false' }).propagationPolicy).toBe('Orphan');
    expect(del({ cascading: 'Background' }).propagationPolicy).toBe('Background');
    expect(del({ cascading: 'foreground', orphanDependents: 'true' }).propagationPolicy).toBe('Orphan');
    expect(del({}).propagationPolicy).toBeUndefined();
    const bad = del({ gracePeriodSeconds: 'soon' });
    expect(bad.gracePeriodSeconds).toBeUndefined();
    expect(bad.warnings[0]).toContain('gracePeriodSeconds');
    expect(del({ waitTimeoutSeconds: 0 }).waitTimeoutMs).toBe(0);
  });

  it('accepts POST /ops only with cloudProvider kubernetes in each description', () => {
    const body = [{ scaleManifest: { account: 'a', location: 'ns', manifestName: 'deployment web', replicas: 1 } }];
    expect(errors(body, 'ops')).toEqual([
      'scaleManifest[0].cloudProvider: empty (POST /ops needs "cloudProvider": "kubernetes" in each description)',
    ]);
    const gce = [{ scaleManifest: { ...body[0]?.scaleManifest, cloudProvider: 'gce' } }];
    expect(errors(gce, 'ops')[0]).toContain('unsupported');
    const k8s = [{ scaleManifest: { ...body[0]?.scaleManifest, cloudProvider: 'kubernetes' } }];
    expect(ok(k8s, 'ops')).toHaveLength(1);
  });

  it('reads cleanupArtifacts with the deploy outputs (an empty list is a no-op)', () => {
    const [op] = ok([{ cleanupArtifacts: { account: 'a', cloudProvider: 'kubernetes', manifests: [] } }]);
    expect(op).toEqual({ type: 'cleanupArtifacts', account: 'a', payload: { manifests: [] } });
  });

  it('parses the single-operation route body', () => {
    const r = parseOperations(
      { account: 'a', location: 'ns', manifestName: 'deployment web' },
      { endpoint: 'kubernetes', operationName: 'pauseRolloutManifest' },
    );
    expect(r.ok).toBe(true);
  });
});

describe('parseOperations: errors name the operation index and field', () => {
  it('rejects a body that is not a list of single-key objects', () => {
    expect(errors({ deployManifest: {} })[0]).toContain('JSON array');
    expect(errors([])[0]).toContain('no operations');
    expect(errors([{ a: {}, b: {} }])[0]).toBe(
      'operation[0]: invalid (each entry must be an object with exactly one key, the operation name)',
    );
  });

  it('reports a missing account, an unknown operation and malformed manifests with their paths', () => {
    const body = [
      { pauseRolloutManifest: { location: 'ns', manifestName: 'deployment web' } },
      { destroyServerGroup: { account: 'a' } },
      {
        deployManifest: {
          account: 'a',
          moniker: { app: 'x' },
          manifests: [
            { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ok' } },
            { apiVersion: 'v1', metadata: { name: 'no-kind' } },
            { apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Secret', metadata: {} }] },
            'not an object',
            { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', labels: { n: 1 } } },
          ],
        },
      },
    ];
    expect(errors(body)).toEqual([
      'pauseRolloutManifest[0].account: empty (an account is required (field "account" or its alias "credentials"))',
      "destroyServerGroup[1]: unsupported (No atomic operation converter found for description 'destroyServerGroup' and cloud provider 'kubernetes')",
      'deployManifest[2].manifests[1].kind: empty (a manifest needs kind)',
      'deployManifest[2].manifests[2].items[0].metadata.name: empty (a manifest needs metadata.name or metadata.generateName)',
      'deployManifest[2].manifests[3]: invalid (a manifest must be a Kubernetes object (a JSON map))',
      'deployManifest[2].manifests[4].metadata.labels.n: invalid (labels values must be strings, got number)',
    ]);
  });

  it('requires a moniker, a parseable manifestName, a valid namespaceOverride, replicas and a valid patch', () => {
    const body = [
      {
        deployManifest: { account: 'a', manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }] },
      },
      {
        deployManifest: {
          account: 'a',
          moniker: { app: 'x' },
          namespaceOverride: 'Not_A_Namespace',
          manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' } }],
        },
      },
      { scaleManifest: { account: 'a', location: 'ns', manifestName: 'web' } },
      {
        patchManifest: {
          account: 'a',
          location: 'ns',
          manifestName: 'deployment web',
          options: { mergeStrategy: 'json' },
          patchBody: [{ op: 'move', path: '/a' }],
        },
      },
      {
        runJob: {
          account: 'a',
          application: 'x',
          manifest: { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } },
        },
      },
    ];
    const out = errors(body);
    expect(out).toContain(
      'deployManifest[0].moniker: empty (every resource deployed via Spinnaker must be assigned a moniker ({"app": ...}))',
    );
    expect(out).toContain(
      'deployManifest[1].namespaceOverride: invalid ("Not_A_Namespace" is not a valid namespace name)',
    );
    expect(out).toContain(
      'scaleManifest[2].manifestName: invalid ("web" is not a full resource name like "deployment web")',
    );
    expect(out).toContain('scaleManifest[2].replicas: empty (replicas must be an integer ≥ 0)');
    expect(out).toContain(
      'patchManifest[3].patchBody[0].op: invalid (json patch operations are add, replace or remove)',
    );
    expect(out).toContain('runJob[4].manifest.kind: unsupported (only kind Job can be run, got Deployment)');
  });
});

describe('validateAccounts', () => {
  const ops = ok([
    {
      deployManifest: {
        account: 'prod',
        moniker: { app: 'x' },
        namespaceOverride: 'payments',
        manifests: [
          { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } },
          { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'b' } },
          { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'payments' } },
        ],
      },
    },
    {
      deployManifest: {
        account: 'prod',
        moniker: { app: 'x' },
        manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a', namespace: 'kube-system' } }],
      },
    },
    { scaleManifest: { account: 'ghost', location: 'shop', manifestName: 'deployment web', replicas: 1 } },
    { deleteManifest: { account: 'prod', location: 'shop', manifestName: 'deployment web' } },
  ]);

  it('reports unknown accounts as notFound and namespaces outside the account as wrongNamespace/omittedNamespace', () => {
    const issues = validateAccounts(ops, {
      knownAccounts: (n) => n === 'prod',
      accountScope: () => ({ namespaces: ['shop', 'kube-system'], omitNamespaces: ['kube-system'] }),
    });
    expect(formatIssues(issues)).toEqual([
      'deployManifest[0].namespaceOverride: wrongNamespace (account prod does not manage namespace "payments" (it manages shop, kube-system))',
      'deployManifest[1].manifests[0].metadata.namespace: omittedNamespace (account prod omits namespace "kube-system")',
      'scaleManifest[2].account: notFound (credentials not found (name: ghost))',
    ]);
  });

  it('accepts everything for an unrestricted known account', () => {
    expect(validateAccounts(ops, { knownAccounts: () => true })).toEqual([]);
  });
});
