import { deleteResult, type OperationResultObject } from '../../shared/ops/results.js';
import { ANNOTATIONS, strategyOf, versionOfName } from '../../shared/ops/spinnaker.js';
import type { CleanupArtifactsPayload, KubeObject } from '../../shared/ops/types.js';
import { deleteAndWait } from './delete.js';
import { apiVersionOfResource as apiVersionOf, collectionPath, intentFor } from '../kube/resources.js';
import { note, type OpContext } from './context.js';

/**
 * cleanupArtifacts (Orca runs it after every deploy): for each deployed manifest annotated
 * `strategy.spinnaker.io/max-version-history: N`, delete all but the newest N versions of its artifact.
 */
export async function cleanupArtifacts(ctx: OpContext, p: CleanupArtifactsPayload): Promise<OperationResultObject> {
  const deleted: KubeObject[] = [];
  let location = '';
  for (const m of p.manifests) {
    const max = strategyOf(m).maxVersionHistory;
    const name = m.metadata.annotations?.[ANNOTATIONS.artifactName];
    if (max === undefined || !name) continue;
    const r = await ctx.discovery.forManifest(m.apiVersion, m.kind, ctx.signal);
    const ns = r.namespaced ? m.metadata.namespace : undefined;
    location = ns ?? '';
    const list = await ctx.kube.getJson<{ items?: KubeObject[] }>(collectionPath(r, ns), {
      accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
      signal: ctx.signal,
      intent: intentFor('list', r, ns),
    });
    const versions = (list.items ?? [])
      .filter((o) => o.metadata.annotations?.[ANNOTATIONS.artifactName] === name)
      .map((o) => ({ name: o.metadata.name ?? '', version: versionOfName(o.metadata.name ?? '') ?? -1 }))
      .sort((a, b) => b.version - a.version);
    for (const old of versions.slice(Math.max(max, 0))) {
      note(ctx, `Deleting ${r.kind} ${old.name}: beyond max-version-history ${max}`);
      await deleteAndWait(ctx, r, ns, old.name, {}, 0);
      deleted.push({ apiVersion: apiVersionOf(r), kind: r.kind, metadata: { name: old.name, namespace: ns ?? '' } });
    }
  }
  return { ...deleteResult(deleted, location), createdArtifacts: [], boundArtifacts: [] };
}
