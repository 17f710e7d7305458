import { describe, expect, it } from 'vitest';
import { createNamespace, kubectl } from '../../infra/index.js';
import { adminKube, deployment, eventually, exists, expectOk, getJson, runOne, stageContext } from './helpers.js';

const ACCOUNT = 'k8s-local';

async function deployWeb(ns: string, name = 'web', extraLabels: Record<string, string> = {}): Promise<void> {
  const d = deployment(name, { app: name });
  (d.metadata as Record<string, unknown>).labels = { tier: 'frontend', ...extraLabels };
  expectOk(
    await runOne(adminKube(), 'deployManifest', {
      account: ACCOUNT,
      moniker: { app: 'shop' },
      namespaceOverride: ns,
      manifests: [d],
    }),
  );
}

async function replicaSetsOf(ns: string, app: string): Promise<string[]> {
  const list = await getJson<{ items: { metadata: { name: string } }[] }>([
    'replicasets',
    '-n',
    ns,
    '-l',
    `app=${app}`,
  ]);
  return list.items.map((i) => i.metadata.name);
}

describe('deleteManifest against the real API server', () => {
  const kc = adminKube();

  it('deletes by label selector with foreground cascading: the Deployment and its ReplicaSets are gone', async () => {
    const ns = await createNamespace('ops-del-fg');
    await deployWeb(ns, 'web');
    await deployWeb(ns, 'admin', { tier: 'backend' });
    await eventually(
      () => replicaSetsOf(ns, 'web'),
      (l) => l.length === 1,
    );
    const r = expectOk(
      await runOne(
        kc,
        'deleteManifest',
        stageContext({
          type: 'deleteManifest',
          account: ACCOUNT,
          location: ns,
          kinds: ['deployment'],
          labelSelectors: { selectors: [{ kind: 'EQUALS', key: 'tier', values: ['frontend'] }] },
          options: { cascading: 'foreground', gracePeriodSeconds: '5' },
          mode: 'label',
          app: 'shop',
        }),
      ),
    );
    expect(r.result).toEqual({ manifestNamesByNamespace: { [ns]: ['deployment web'] } });
    // The executor waited for the foreground deletion to finish: the owner is gone, so its dependents are too.
    expect(await exists(['deployment', 'web', '-n', ns])).toBe(false);
    expect(await replicaSetsOf(ns, 'web')).toEqual([]);
    expect(r.resourceVersions[`apps/v1/Deployment/${ns}/web`]).toBe('');
    expect(await exists(['deployment', 'admin', '-n', ns])).toBe(true);
  });

  it('deletes by name with cascading false: the ReplicaSet is orphaned and stays', async () => {
    const ns = await createNamespace('ops-del-orphan');
    await deployWeb(ns);
    const [rs] = await eventually(
      () => replicaSetsOf(ns, 'web'),
      (l) => l.length === 1,
    );
    const r = expectOk(
      await runOne(kc, 'deleteManifest', {
        account: ACCOUNT,
        location: ns,
        manifestName: 'deployment web',
        options: { cascading: false },
      }),
    );
    expect(r.result).toEqual({ manifestNamesByNamespace: { [ns]: ['deployment web'] } });
    expect(await exists(['deployment', 'web', '-n', ns])).toBe(false);
    const live = await getJson(['replicaset', rs as string, '-n', ns]);
    expect(live.metadata.ownerReferences ?? []).toEqual([]);
  });

  it('answers with a result object even when nothing matched', async () => {
    const ns = await createNamespace('ops-del-none');
    const r = expectOk(
      await runOne(kc, 'deleteManifest', { account: ACCOUNT, location: ns, manifestName: 'configMap nothing' }),
    );
    expect(r.result).toEqual({ manifestNamesByNamespace: { [ns]: [] } });
  });
});

describe('patchManifest against the real API server', () => {
  const kc = adminKube();

  it('applies strategic, merge and json patches', async () => {
    const ns = await createNamespace('ops-patch');
    await deployWeb(ns);
    const strategic = expectOk(
      await runOne(
        kc,
        'patchManifest',
        stageContext({
          type: 'patchManifest',
          account: ACCOUNT,
          location: ns,
          manifestName: 'deployment web',
          options: { mergeStrategy: 'strategic', record: true },
          // Strategic merge: the container list merges by name, so `main` keeps its image and gains an env var.
          patchBody: [
            {
              spec: { template: { spec: { containers: [{ name: 'main', env: [{ name: 'MODE', value: 'blue' }] }] } } },
            },
          ],
          manifestArtifactAccount: 'embedded-artifact',
          source: 'text',
        }),
      ),
    );
    expect(strategic.result).toEqual({
      manifestNamesByNamespace: { [ns]: ['deployment web'] },
      manifests: [{ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web', namespace: ns } }],
      boundArtifacts: [],
      createdArtifacts: [],
    });
    let d = await getJson(['deployment', 'web', '-n', ns]);
    expect(d.spec.template.spec.containers[0]).toMatchObject({
      name: 'main',
      image: 'nginx:1.25',
      env: [{ name: 'MODE', value: 'blue' }],
    });
    expect(d.metadata.annotations['kubernetes.io/change-cause']).toContain('patchManifest');

    expectOk(
      await runOne(kc, 'patchManifest', {
        account: ACCOUNT,
        location: ns,
        manifestName: 'deployment web',
        options: { mergeStrategy: 'merge' },
        patchBody: { metadata: { labels: { tier: null, owner: 'team-a' } } },
      }),
    );
    d = await getJson(['deployment', 'web', '-n', ns]);
    expect(d.metadata.labels.owner).toBe('team-a');
    expect(d.metadata.labels.tier).toBeUndefined();

    const json = expectOk(
      await runOne(kc, 'patchManifest', {
        account: ACCOUNT,
        location: ns,
        manifestName: 'deployment web',
        options: { mergeStrategy: 'json' },
        patchBody: [
          { op: 'replace', path: '/spec/replicas', value: 3 },
          { op: 'add', path: '/metadata/annotations/team', value: 'a' },
        ],
      }),
    );
    d = await getJson(['deployment', 'web', '-n', ns]);
    expect(d.spec.replicas).toBe(3);
    expect(d.metadata.annotations.team).toBe('a');
    expect(Number(json.resourceVersions[`apps/v1/Deployment/${ns}/web`])).toBeGreaterThan(0);
  });

  it('fails with the API server reason when the patch is invalid', async () => {
    const ns = await createNamespace('ops-patch-bad');
    await deployWeb(ns);
    const r = await runOne(kc, 'patchManifest', {
      account: ACCOUNT,
      location: ns,
      manifestName: 'deployment web',
      options: { mergeStrategy: 'json' },
      patchBody: [{ op: 'remove', path: '/spec/doesNotExist' }],
    });
    expect(r.ok).toBe(false);
    expect(r.errorCode).toMatch(/^SA_ERR_/);
    expect(r.result).toMatchObject({ type: 'EXCEPTION', operation: 'KubernetesPatchManifestOperation' });
    await kubectl(['get', 'deployment', 'web', '-n', ns]);
  });
});
