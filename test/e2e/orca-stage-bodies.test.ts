/**
 * Every Kubernetes stage of Orca, with the operation body Orca builds for it (test/fixtures/orca/kubernetes-stages.ts:
 * the stage context as Deck writes it, what the stage's earlier tasks add, turned into an operation by the stage's
 * task), posted to a real plugin-server with a real agent on the shared control plane; then the fields Orca reads
 * back, as the Orca class that reads them reads them. A kwok node runs the Pods (the Run Job's log included).
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { kubectl, waitFor } from '../infra/index.js';
import { KwokNode } from '../infra/kwok.js';
import { replicaSet } from '../infra/manifests.js';
import { useStack } from '../infra/stack.js';
import {
  bakedManifestArtifact,
  deleteManifest,
  deployManifest,
  patchManifest,
  runJob,
  updateManifest,
} from '../fixtures/orca/kubernetes-stages.js';
import { OpsClient, type Obj } from './operations-helpers.js';

describe('Orca stage bodies on an agent account', () => {
  const stack = useStack({ name: 'orca-bodies', store: 'memory' });
  const ops = new OpsClient(stack);
  const account = 'orca-bodies';
  const app = 'shop';
  const enc = encodeURIComponent;
  const reportLog = 'generating report\nSPINNAKER_PROPERTY_REPORT_ID=r-1142\nSPINNAKER_PROPERTY_ROWS=17\n';

  const get = async (args: string[]): Promise<Obj> =>
    JSON.parse((await kubectl(['get', ...args, '-n', stack.ns, '-o', 'json'])).stdout) as Obj;

  const webReplicaSet = (image: string) =>
    replicaSet('web', { app: 'web' }, 1, { nodeName: `kwok-${stack.ns}`, containers: [{ name: 'main', image }] });

  beforeAll(async () => {
    const node = await KwokNode.start({
      dir: join(stack.dir, 'kwok'),
      name: `kwok-${stack.ns}`,
      logs: [{ namespace: stack.ns, containers: ['report'], text: reportLog }],
    });
    stack.defer(() => node.stop());
    await stack.addAgent({ accounts: [{ name: account }] });
  });

  it('Deploy (Manifest) with red/black: the task result PromoteManifestKatoOutputsTask and the strategy read', async () => {
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'web' },
      // Traffic management adds the selector's label to each version's pod template, apart from its own selector.
      spec: { selector: { 'serves-traffic': 'web' }, ports: [{ port: 80 }] },
    };
    await ops.run(deployManifest({ account, app, namespace: stack.ns, manifests: [service] }));

    const traffic = { services: ['service web'], strategy: 'redblack' as const };
    const first = await ops.run(
      deployManifest({
        account,
        app,
        namespace: stack.ns,
        manifests: [webReplicaSet('nginx:1.25')],
        traffic,
        refId: '2',
      }),
    );
    const result = first.resultObjects[0]!;
    // DeployManifestStage.GetDeployedManifests: outputs.manifests' ReplicaSets, their namespace and the cluster
    // annotation it dereferences without a null check.
    const deployed = (result.manifests as Obj[]).find((m) => String(m.kind).toLowerCase() === 'replicaset')!;
    expect(deployed.metadata).toMatchObject({
      name: 'web-v000',
      namespace: stack.ns,
      annotations: { 'moniker.spinnaker.io/cluster': 'replicaSet web', 'moniker.spinnaker.io/application': app },
    });
    // PromoteManifestKatoOutputsTask: manifestNamesByNamespace, createdArtifacts. The keys are those of
    // Clouddriver's OperationResult (deployedNamesByLocation is a Run Job's only).
    expect(Object.keys(result).sort()).toEqual([
      'boundArtifacts',
      'createdArtifacts',
      'manifestNamesByNamespace',
      'manifests',
    ]);
    expect(result.manifestNamesByNamespace).toEqual({ [stack.ns]: ['replicaSet web-v000'] });
    expect(result.createdArtifacts).toEqual([
      expect.objectContaining({ type: 'kubernetes/replicaSet', name: 'web', version: 'v000', location: stack.ns }),
    ]);
    // The red/black strategy's traffic annotation, from the lifted `services`.
    const rs = await get(['replicaset', 'web-v000']);
    expect(rs.metadata.annotations['traffic.spinnaker.io/load-balancers']).toContain('service web');
    expect(rs.spec.template.metadata.labels).toMatchObject({ app: 'web', 'serves-traffic': 'web' });

    await ops.run(
      deployManifest({
        account,
        app,
        namespace: stack.ns,
        manifests: [webReplicaSet('nginx:1.26')],
        traffic,
        refId: '3',
      }),
    );
    // ManifestOperationsHelper.getOldManifestNames: the cluster's ReplicaSets minus the one just deployed.
    const cluster = await stack.get<Obj[]>(
      `/manifests/${account}/${stack.ns}/replicaSet/cluster/${app}/${enc('replicaSet web')}`,
    );
    expect(cluster.body.map((c) => `${c.kind as string} ${c.name as string}`).sort()).toEqual([
      'replicaSet web-v000',
      'replicaSet web-v001',
    ]);
    // previousDeploymentNeitherStableNorFailed reads the old version's status and manifest.status counts.
    const old = await ops.manifest(account, stack.ns, 'replicaSet web-v000');
    expect(old.body.status).toMatchObject({ stable: expect.any(Object), failed: { state: false } });
    expect(old.body.manifest.status).toHaveProperty('replicas');

    // The appended Disable (Manifest) stage: OldManifestActionAppender's context, posted by DisableManifestTask.
    await ops.run([
      {
        disableManifest: {
          account,
          app,
          cloudProvider: 'kubernetes',
          manifestName: 'replicaSet web-v000',
          location: stack.ns,
        },
      },
    ]);
    const disabled = await get(['replicaset', 'web-v000']);
    expect(disabled.spec.template.metadata.labels).not.toHaveProperty('serves-traffic');
    // Enable (Manifest) as Deck's ManifestTrafficStageConfig writes it.
    await ops.run(
      updateManifest('enableManifest', { account, app, namespace: stack.ns, manifestName: 'replicaSet web-v000' }),
    );
    expect((await get(['replicaset', 'web-v000'])).spec.template.metadata.labels).toMatchObject({
      'serves-traffic': 'web',
    });
  });

  it('Bake (Manifest) output deployed from its artifact, an image bound; Find Artifacts From Resource reads it back', async () => {
    const rendered = [
      'apiVersion: apps/v1',
      'kind: Deployment',
      'metadata: {name: api}',
      'spec:',
      '  replicas: 1',
      '  selector: {matchLabels: {app: api}}',
      '  template:',
      '    metadata: {labels: {app: api}}',
      `    spec: {nodeName: kwok-${stack.ns}, containers: [{name: api, image: registry.example.com/api}]}`,
      '---',
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata: {name: api-settings}',
      'data: {mode: blue}',
      '',
    ].join('\n');
    const baked = bakedManifestArtifact('api-rendered', rendered);
    // ManifestEvaluator.getManifestsFromArtifact: PUT /artifacts/fetch/ with the bound artifact, then YAML loadAll.
    const fetched = await fetch(`${stack.httpBase}/artifacts/fetch/`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(baked),
    });
    expect(fetched.status).toBe(200);
    const manifests = parseAllDocuments(await fetched.text()).map((d) => d.toJSON() as object);
    expect(manifests).toHaveLength(2);

    // An expected docker image artifact of the trigger, as ArtifactUtils resolves it into requiredArtifacts.
    const image = {
      type: 'docker/image',
      customKind: false,
      name: 'registry.example.com/api',
      reference: 'registry.example.com/api:2.0.1',
      metadata: {},
      artifactAccount: 'docker-registry',
    };
    const task = await ops.run(
      deployManifest({
        account,
        app,
        namespace: stack.ns,
        manifests,
        artifact: { id: 'a1b2c3', account: 'embedded-artifact' },
        requiredArtifacts: [image],
        optionalArtifacts: [baked, image],
      }),
    );
    const result = task.resultObjects[0]!;
    expect(result.boundArtifacts).toEqual([
      expect.objectContaining({ type: 'docker/image', reference: image.reference }),
    ]);
    expect([...(result.manifestNamesByNamespace[stack.ns] as string[])].sort()).toEqual([
      'configMap api-settings-v000',
      'deployment api',
    ]);
    const deployment = await get(['deployment', 'api']);
    expect(deployment.spec.template.spec.containers[0].image).toBe(image.reference);

    // FindArtifactsFromResourceTask: GET /manifests (includeEvents=false), `manifest` and `artifacts`.
    const found = await ops.manifest(account, stack.ns, 'deployment api');
    expect(found.body.manifest.metadata.name).toBe('api');
    expect(found.body.artifacts).toEqual([
      {
        type: 'docker/image',
        customKind: false,
        name: 'registry.example.com/api',
        reference: image.reference,
        metadata: {},
      },
    ]);
  });

  it('Patch, Scale, Pause, Resume, Rolling Restart, Undo Rollout and Delete (Manifest), as their tasks post them', async () => {
    const target = { account, app, namespace: stack.ns, manifestName: 'deployment api' };
    // PatchManifestTask: strategic patch as one object (its `manifests[0]`), a json patch as the list.
    const strategic = await ops.run(
      patchManifest({
        ...target,
        mergeStrategy: 'strategic',
        patch: [
          { spec: { template: { spec: { containers: [{ name: 'api', image: 'registry.example.com/api:2.1.0' }] } } } },
        ],
      }),
    );
    // Patch expects a result (kato.result.expected): PromoteManifestKatoOutputsTask reads its names.
    expect(strategic.resultObjects[0]).toMatchObject({ manifestNamesByNamespace: { [stack.ns]: ['deployment api'] } });
    await ops.run(
      patchManifest({
        ...target,
        mergeStrategy: 'json',
        patch: [{ op: 'add', path: '/metadata/labels', value: { tier: 'backend' } }],
      }),
    );
    let d = await get(['deployment', 'api']);
    expect(d.spec.template.spec.containers[0].image).toBe('registry.example.com/api:2.1.0');
    expect(d.metadata.labels).toEqual({ tier: 'backend' });

    await ops.run(updateManifest('scaleManifest', { ...target, extra: { replicas: 2 } }));
    expect((await get(['deployment', 'api'])).spec.replicas).toBe(2);
    await ops.run(updateManifest('pauseRolloutManifest', target));
    expect((await get(['deployment', 'api'])).spec.paused).toBe(true);
    await ops.run(updateManifest('resumeRolloutManifest', target));
    expect((await get(['deployment', 'api'])).spec.paused).toBeUndefined();
    await ops.run(updateManifest('rollingRestartManifest', target));
    d = await get(['deployment', 'api']);
    expect(d.spec.template.metadata.annotations).toHaveProperty('kubectl.kubernetes.io/restartedAt');

    // Undo Rollout: one revision back, once the Deployment controller has recorded the revisions.
    await waitFor('the Deployment to have three revisions', async () => {
      const sets = (await get(['replicasets', '-l', 'app=api'])).items as Obj[];
      return sets.length >= 3 ? sets : undefined;
    });
    await ops.run(updateManifest('undoRolloutManifest', { ...target, extra: { numRevisionsBack: 1 } }));
    d = await get(['deployment', 'api']);
    expect(d.spec.template.metadata.annotations ?? {}).not.toHaveProperty('kubectl.kubernetes.io/restartedAt');
    expect(d.spec.template.spec.containers[0].image).toBe('registry.example.com/api:2.1.0');

    // DeleteManifestTask expects a result too.
    const deleted = await ops.run(deleteManifest(target));
    expect(deleted.resultObjects[0]).toMatchObject({ manifestNamesByNamespace: { [stack.ns]: ['deployment api'] } });
    const gone = await kubectl(['get', 'deployment', 'api', '-n', stack.ns], { allowFail: true });
    expect(gone.code).not.toBe(0);
  });

  it('Run Job (Manifest) with a property file: deploy.jobs, WaitOnJobCompletion and the properties', async () => {
    const job = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { generateName: 'report-' },
      spec: {
        backoffLimit: 0,
        template: {
          spec: {
            nodeName: `kwok-${stack.ns}`,
            restartPolicy: 'Never',
            containers: [{ name: 'report', image: 'registry.example.com/report:1' }],
          },
        },
      },
    };
    const task = await ops.run(
      runJob({ account, application: app, namespace: stack.ns, manifest: job, propertyFile: 'report' }),
    );
    // MonitorKatoTask: deploy.jobs from deployedNamesByLocation, one location with one `job <name>`.
    const jobs = task.resultObjects[0]!.deployedNamesByLocation as Record<string, string[]>;
    expect(Object.keys(jobs)).toEqual([stack.ns]);
    expect(jobs[stack.ns]).toHaveLength(1);
    const name = jobs[stack.ns]![0]!;
    expect(name).toMatch(/^job report-/);
    // WaitOnJobCompletion: GET the job by (moniker.app ?: application), the stage's account, location and name.
    const path = `/applications/${app}/jobs/${account}/${stack.ns}/${enc(name)}`;
    const status = await waitFor('the Job to succeed', async () => {
      const r = await stack.get<Obj>(path);
      return r.body.jobState === 'Succeeded' ? r.body : undefined;
    });
    expect(status).toMatchObject({
      account,
      location: stack.ns,
      provider: 'kubernetes',
      completionDetails: expect.any(Object),
    });
    // getPropertyFileContents: GET .../{name}/{propertyFile}.
    expect(await stack.get<Obj>(`${path}/report`)).toEqual({ status: 200, body: { report_id: 'r-1142', rows: '17' } });
  });
});
