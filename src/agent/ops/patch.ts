import { ScaleAgentError } from '../../shared/errors.js';
import { bindArtifacts, unboundArtifacts, artifactKey } from '../../shared/ops/artifacts.js';
import { NATIVE_GROUPS } from '../../shared/ops/kinds.js';
import { patchResult, type OperationResultObject } from '../../shared/ops/results.js';
import { ANNOTATIONS } from '../../shared/ops/spinnaker.js';
import type { Artifact, KubeObject, PatchPayload, PatchStrategy } from '../../shared/ops/types.js';
import { apiVersionOfResource as apiVersionOf, intentFor, objectPath } from '../kube/resources.js';
import type { DiscoveredResource as OpResource } from '../kube/discovery.js';
import { note, retryConflicts, track, type OpContext } from './context.js';
import { markedJsonPatch, readForMark, refuseUnmarkedRepeat, tookEarlier } from './once-in-cluster.js';

const CONTENT_TYPES: Record<PatchStrategy, string> = {
  strategic: 'application/strategic-merge-patch+json',
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
};

/** Sends one patch to an object (or a subresource), conflicts retried, and tracks the result. */
export function patchObject(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  name: string,
  strategy: PatchStrategy,
  body: unknown,
  sub?: string,
): Promise<KubeObject> {
  return retryConflicts(ctx, `${r.kind} ${name}`, () => sendPatch(ctx, r, ns, name, strategy, body, sub));
}

async function sendPatch(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  name: string,
  strategy: PatchStrategy,
  body: unknown,
  sub?: string,
): Promise<KubeObject> {
  const out = await ctx.kube.request<KubeObject>('PATCH', objectPath(r, ns, name, sub), {
    query: { fieldManager: ctx.fieldManager },
    body,
    contentType: CONTENT_TYPES[strategy],
    signal: ctx.signal,
    intent: intentFor('patch', r, ns, name, sub),
  });
  if (!sub || sub === 'scale') {
    // A Scale's resourceVersion is its parent's, so it marks the parent object for the cache barrier.
    track(ctx, {
      ...out,
      apiVersion: apiVersionOf(r),
      kind: r.kind,
      metadata: { ...out.metadata, name, namespace: r.namespaced ? ns : '' },
    });
  }
  return out;
}

export async function patchManifest(ctx: OpContext, p: PatchPayload): Promise<OperationResultObject> {
  const r = await ctx.discovery.forKindName(p.target.kind, ctx.signal);
  let body = p.patchBody;
  let bound: Artifact[] = [];
  if (p.strategy !== 'json') {
    const bindable = [...p.allArtifacts, ...p.requiredArtifacts];
    const b = bindArtifacts(
      { apiVersion: apiVersionOf(r), kind: r.kind, metadata: {}, ...(body as object) } as KubeObject,
      bindable,
    );
    body = { ...(body as object), ...stripped(b.manifest, body as Record<string, unknown>) };
    bound = b.bound;
    const missing = unboundArtifacts(p.requiredArtifacts, bound);
    if (missing.length > 0) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        `The following required artifacts could not be bound: '${missing.map(artifactKey).join(', ')}'`,
      );
    }
    if (p.record) {
      const b2 = body as { metadata?: { annotations?: Record<string, string> } };
      b2.metadata = {
        ...b2.metadata,
        annotations: {
          ...b2.metadata?.annotations,
          [ANNOTATIONS.changeCause]: `scale-agent patchManifest (${p.strategy})`,
        },
      };
    }
  }
  // Custom resources have no strategic-merge schema; kubectl refuses, we fall back to a JSON merge patch.
  const strategy: PatchStrategy = p.strategy === 'strategic' && !NATIVE_GROUPS.has(r.group) ? 'merge' : p.strategy;
  if (strategy !== p.strategy)
    note(ctx, `${r.kind} is a custom resource: applying the strategic patch as a JSON merge patch`);
  note(ctx, `Patching ${r.kind} ${p.target.name} (${strategy})`);
  if (strategy === 'json' && ctx.operationId) await jsonPatchOnce(ctx, r, p.target.location, p.target.name, body);
  else await patchObject(ctx, r, p.target.location, p.target.name, strategy, body);
  return patchResult(
    {
      apiVersion: apiVersionOf(r),
      kind: r.kind,
      name: p.target.name,
      namespace: r.namespaced ? p.target.location : '',
    },
    bound,
  );
}

/**
 * A JSON patch (an `add` to `/-` appends again when repeated) that carries its operation's mark, so the operation sent
 * again after an agent restart finds it applied instead of applying it twice (once-in-cluster.ts). Each attempt
 * re-reads: the mark and a 409 on the resourceVersion precondition are decided on the object as it is now.
 */
function jsonPatchOnce(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  name: string,
  ops: unknown,
): Promise<KubeObject> {
  const id = ctx.operationId ?? '';
  return retryConflicts(ctx, `${r.kind} ${name}`, async () => {
    const live = await readForMark(ctx, r, ns, name);
    if (live && tookEarlier(ctx, live)) {
      track(ctx, live);
      return live;
    }
    refuseUnmarkedRepeat(ctx, `JSON patch of ${r.kind} ${name}`);
    const marked = live && Array.isArray(ops) ? markedJsonPatch(ops, live, id) : undefined;
    if (live && !marked)
      note(ctx, `The JSON patch rewrites metadata.annotations: it carries no mark of operation ${id}`);
    return sendPatch(ctx, r, ns, name, 'json', marked ?? ops);
  });
}

/** The bound manifest's keys that the patch body had (binding added apiVersion/kind/metadata only to walk it). */
function stripped(bound: KubeObject, original: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(original)) out[k] = (bound as Record<string, unknown>)[k];
  return out;
}
