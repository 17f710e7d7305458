import { ScaleAgentError } from '../../shared/errors.js';
import { hasCapability, parseKind } from '../../shared/ops/kinds.js';
import { ANNOTATIONS } from '../../shared/ops/spinnaker.js';
import type { KubeObject, ScalePayload, Target, UndoRolloutPayload } from '../../shared/ops/types.js';
import { collectionPath, intentFor } from '../kube/resources.js';
import type { DiscoveredResource as OpResource } from '../kube/discovery.js';
import { mustGet, note, type OpContext } from './context.js';
import { markedJsonPatch, markedMergePatch, readForMark, tookEarlier } from './once-in-cluster.js';
import { patchObject } from './patch.js';

/** Resolves a target and checks the kind may run the operation, as Clouddriver's handler interfaces decide. */
async function resolveFor(ctx: OpContext, t: Target, capability: 'scale' | 'rollout', op: string): Promise<OpResource> {
  if (!hasCapability(parseKind(t.kind), capability)) {
    throw new ScaleAgentError('INVALID_INPUT', `Resource with kind ${t.kind} does not support ${op}`);
  }
  return ctx.discovery.forKindName(t.kind, ctx.signal);
}

export async function scaleManifest(ctx: OpContext, p: ScalePayload): Promise<null> {
  const r = await resolveFor(ctx, p.target, 'scale', 'scale');
  note(ctx, `Scaling ${r.kind} ${p.target.name} to ${p.replicas} replicas`);
  await patchObject(ctx, r, p.target.location, p.target.name, 'merge', { spec: { replicas: p.replicas } }, 'scale');
  return null;
}

export async function pauseRollout(ctx: OpContext, t: Target, paused: boolean): Promise<null> {
  const r = await resolveFor(ctx, t, 'rollout', paused ? 'pause rollout' : 'resume rollout');
  if (r.kind !== 'Deployment') {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `${paused ? 'pausing' : 'resuming'} a rollout is supported for deployments only, not ${r.kind}`,
    );
  }
  note(ctx, `${paused ? 'Pausing' : 'Resuming'} rollout of ${r.kind} ${t.name}`);
  await patchObject(ctx, r, t.location, t.name, 'merge', { spec: { paused } });
  return null;
}

export async function rollingRestart(ctx: OpContext, t: Target): Promise<null> {
  const r = await resolveFor(ctx, t, 'rollout', 'rolling restart');
  // Each run writes a new time, so a repeat after an agent restart would restart again: it looks for its mark first.
  if (ctx.operationId && tookEarlier(ctx, await readForMark(ctx, r, t.location, t.name))) return null;
  const now = new Date().toISOString();
  note(ctx, `Restarting ${r.kind} ${t.name} (${ANNOTATIONS.restartedAt}=${now})`);
  await patchObject(
    ctx,
    r,
    t.location,
    t.name,
    'strategic',
    markedMergePatch(ctx, { spec: { template: { metadata: { annotations: { [ANNOTATIONS.restartedAt]: now } } } } }),
  );
  return null;
}

interface Revision {
  revision: number;
  /** What to write back: a Deployment's pod template, or a ControllerRevision's patch. */
  apply: () => Promise<void>;
}

/**
 * `kubectl rollout undo` without kubectl. A Deployment goes back to the pod template of the ReplicaSet carrying
 * that `deployment.kubernetes.io/revision`; StatefulSets and DaemonSets re-apply the ControllerRevision's patch.
 */
export async function undoRollout(ctx: OpContext, p: UndoRolloutPayload): Promise<null> {
  const r = await resolveFor(ctx, p.target, 'rollout', 'undo rollout');
  const ns = p.target.location;
  const owner = await mustGet(ctx, r, ns, p.target.name);
  // "Previous" and `numRevisionsBack` count from the revision current now: a repeat after an agent restart would go
  // back (or forth) once more, so it looks for the mark the first run's patch wrote.
  if (tookEarlier(ctx, owner)) return null;
  if (r.kind === 'Deployment' && (owner.spec as { paused?: boolean } | undefined)?.paused) {
    throw new ScaleAgentError(
      'CONFLICT',
      `cannot undo the rollout of paused deployment ${p.target.name}; resume it first`,
    );
  }
  const revisions =
    r.kind === 'Deployment' ? await deploymentRevisions(ctx, r, owner) : await controllerRevisions(ctx, r, owner);
  revisions.sort((a, b) => a.revision - b.revision);
  const current = revisions[revisions.length - 1];
  let chosen: Revision | undefined;
  if (p.numRevisionsBack !== undefined) chosen = revisions[revisions.length - 1 - p.numRevisionsBack];
  else if (p.revision !== undefined && p.revision > 0) chosen = revisions.find((x) => x.revision === p.revision);
  else chosen = revisions[revisions.length - 2];
  if (!chosen) {
    const wanted =
      p.numRevisionsBack !== undefined
        ? `${p.numRevisionsBack} revision(s) back`
        : p.revision
          ? `revision ${p.revision}`
          : 'a previous revision';
    throw new ScaleAgentError(
      'NOT_FOUND',
      `${r.kind} ${p.target.name} has no ${wanted} (revisions: ${revisions.map((x) => x.revision).join(', ') || 'none'})`,
    );
  }
  if (chosen === current) {
    note(ctx, `${r.kind} ${p.target.name} is already at revision ${chosen.revision}; nothing to undo`);
    return null;
  }
  note(ctx, `Rolling ${r.kind} ${p.target.name} back to revision ${chosen.revision}`);
  await chosen.apply();
  return null;
}

async function ownedBy<T extends KubeObject>(
  ctx: OpContext,
  kindName: string,
  ns: string,
  owner: KubeObject,
): Promise<T[]> {
  const r = await ctx.discovery.forKindName(kindName, ctx.signal);
  const list = await ctx.kube.getJson<{ items?: T[] }>(collectionPath(r, ns), {
    signal: ctx.signal,
    intent: intentFor('list', r, ns),
  });
  const uid = owner.metadata.uid;
  return (list.items ?? []).filter((o) =>
    ((o.metadata.ownerReferences as { uid?: string }[] | undefined) ?? []).some((ref) => ref.uid === uid),
  );
}

async function deploymentRevisions(ctx: OpContext, r: OpResource, d: KubeObject): Promise<Revision[]> {
  const ns = d.metadata.namespace ?? '';
  const sets = await ownedBy(ctx, 'replicaSet', ns, d);
  return sets.flatMap((rs) => {
    const revision = Number(rs.metadata.annotations?.[ANNOTATIONS.deploymentRevision]);
    if (!Number.isInteger(revision)) return [];
    return [
      {
        revision,
        apply: async () => {
          const template = structuredClone(
            (rs.spec as { template: KubeObject['spec'] & { metadata?: { labels?: Record<string, string> } } }).template,
          );
          delete template.metadata?.labels?.['pod-template-hash'];
          const ops = [{ op: 'replace', path: '/spec/template', value: template }];
          // A Deployment with revisions has the controller's revision annotation, so the mark is one more key.
          const marked = ctx.operationId ? markedJsonPatch(ops, d, ctx.operationId) : undefined;
          await patchObject(ctx, r, ns, d.metadata.name ?? '', 'json', marked ?? ops);
        },
      },
    ];
  });
}

async function controllerRevisions(ctx: OpContext, r: OpResource, owner: KubeObject): Promise<Revision[]> {
  const ns = owner.metadata.namespace ?? '';
  const revs = await ownedBy<KubeObject & { revision?: number; data?: unknown }>(ctx, 'controllerRevision', ns, owner);
  return revs.map((cr) => ({
    revision: Number(cr.revision ?? 0),
    apply: async () => {
      await patchObject(ctx, r, ns, owner.metadata.name ?? '', 'strategic', markedMergePatch(ctx, cr.data as object));
    },
  }));
}
