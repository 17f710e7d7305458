import { ScaleAgentError } from '../../shared/errors.js';
import { ANNOTATIONS, strategyOf } from '../../shared/ops/spinnaker.js';
import type { ApplyMode, KubeObject } from '../../shared/ops/types.js';
import { deleteAndWait } from './delete.js';
import { collectionPath, intentFor, objectPath } from '../kube/resources.js';
import type { DiscoveredResource as OpResource } from '../kube/discovery.js';
import { getObject, note, retryConflicts, track, type OpContext } from './context.js';
import { carriesMark, earlierCreation } from './once-in-cluster.js';

export type SubmitMode =
  | { kind: 'server-side'; force: boolean }
  | { kind: 'client-side' }
  | { kind: 'replace' }
  | { kind: 'recreate' }
  | { kind: 'create' };

/**
 * How a manifest is submitted. Clouddriver's strategy annotations decide first (`recreate`, `replace`,
 * `server-side-apply: true|false|force-conflicts`), then our `scale-agent.io/apply-mode` annotation, then the
 * account/request default. Server-side apply without an explicit annotation forces conflicts: the pipeline is the
 * source of truth, as it is under kubectl's client-side apply, which overwrites whatever it sends.
 */
export function submitModeOf(manifest: KubeObject, fallback: ApplyMode, forceCreate: boolean): SubmitMode {
  if (!manifest.metadata.name && manifest.metadata.generateName) return { kind: 'create' };
  const s = strategyOf(manifest);
  if (forceCreate || s.recreate) return { kind: 'recreate' };
  if (s.replace) return { kind: 'replace' };
  if (s.serverSideApply === 'true') return { kind: 'server-side', force: false };
  if (s.serverSideApply === 'force-conflicts') return { kind: 'server-side', force: true };
  if (s.serverSideApply === 'false') return { kind: 'client-side' };
  const mode = manifest.metadata.annotations?.[ANNOTATIONS.applyMode] ?? fallback;
  return mode === 'client-side' ? { kind: 'client-side' } : { kind: 'server-side', force: true };
}

/** Submits one manifest and returns the object as the API server stored it. */
export async function submit(
  ctx: OpContext,
  r: OpResource,
  manifest: KubeObject,
  mode: SubmitMode,
): Promise<KubeObject> {
  const ns = r.namespaced ? manifest.metadata.namespace : undefined;
  const name = manifest.metadata.name ?? '';
  const what = `${r.kind} ${name || manifest.metadata.generateName}`;
  if (mode.kind === 'create' || mode.kind === 'recreate') {
    const earlier = await earlierCreation(ctx, r, ns, manifest);
    if (earlier) {
      track(ctx, earlier);
      note(ctx, `${r.kind} ${earlier.metadata.name} was created by an earlier run of operation ${ctx.operationId}`);
      return earlier;
    }
  }
  const result = await retryConflicts(ctx, what, async () => {
    switch (mode.kind) {
      case 'server-side':
        return ctx.kube.request<KubeObject>('PATCH', objectPath(r, ns, name), {
          query: { fieldManager: ctx.fieldManager, force: mode.force ? 'true' : undefined },
          body: manifest,
          contentType: 'application/apply-patch+yaml',
          signal: ctx.signal,
          intent: intentFor('patch', r, ns, name),
        });
      case 'client-side':
        return clientSideApply(ctx, r, ns, manifest);
      case 'replace': {
        const live = await getObject(ctx, r, ns, name);
        if (!live) return create(ctx, r, ns, manifest);
        const body = {
          ...manifest,
          metadata: { ...manifest.metadata, resourceVersion: live.metadata.resourceVersion },
        };
        return ctx.kube.request<KubeObject>('PUT', objectPath(r, ns, name), {
          query: { fieldManager: ctx.fieldManager },
          body,
          signal: ctx.signal,
          intent: intentFor('update', r, ns, name),
        });
      }
      case 'recreate': {
        if (name) {
          const gone = await deleteAndWait(ctx, r, ns, name, { propagationPolicy: 'Foreground' }, ctx.waitTimeoutMs);
          if (!gone) {
            throw new ScaleAgentError(
              'TIMEOUT',
              `${what} was not deleted within ${ctx.waitTimeoutMs} ms; cannot recreate it`,
            );
          }
        }
        return create(ctx, r, ns, manifest);
      }
      case 'create':
        return create(ctx, r, ns, manifest);
    }
  });
  track(ctx, result);
  note(
    ctx,
    `Submitted ${what} (${mode.kind === 'server-side' ? `server-side apply as ${ctx.fieldManager}` : mode.kind})`,
  );
  return result;
}

function create(ctx: OpContext, r: OpResource, ns: string | undefined, manifest: KubeObject): Promise<KubeObject> {
  return ctx.kube.request<KubeObject>('POST', collectionPath(r, ns), {
    query: { fieldManager: ctx.fieldManager },
    body: manifest,
    signal: ctx.signal,
    intent: intentFor('create', r, ns, manifest.metadata.name),
    marked: carriesMark(manifest),
  });
}

/**
 * kubectl-style apply without kubectl: the last applied configuration lives in the usual annotation, and the
 * change is a JSON merge patch that sets what the manifest says and removes what the previous apply set and this
 * one no longer does. Lists are replaced whole (merge-patch semantics), which also works for custom resources.
 */
async function clientSideApply(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  manifest: KubeObject,
): Promise<KubeObject> {
  const name = manifest.metadata.name ?? '';
  const desired = structuredClone(manifest);
  const { [ANNOTATIONS.lastApplied]: _old, ...ownAnnotations } = desired.metadata.annotations ?? {};
  desired.metadata.annotations = ownAnnotations;
  const lastApplied = JSON.stringify(desired);
  desired.metadata.annotations = { ...ownAnnotations, [ANNOTATIONS.lastApplied]: lastApplied };
  const live = await getObject(ctx, r, ns, name);
  if (!live) return create(ctx, r, ns, desired);
  const patch = mergePatch(parseLastApplied(live), desired);
  return ctx.kube.request<KubeObject>('PATCH', objectPath(r, ns, name), {
    query: { fieldManager: ctx.fieldManager },
    body: patch,
    contentType: 'application/merge-patch+json',
    signal: ctx.signal,
    intent: intentFor('patch', r, ns, name),
  });
}

function parseLastApplied(live: KubeObject): unknown {
  try {
    return JSON.parse(live.metadata.annotations?.[ANNOTATIONS.lastApplied] ?? '{}');
  } catch {
    return {};
  }
}

/** RFC 7386 patch turning `from` into `to` for the keys either mentions. */
export function mergePatch(from: unknown, to: unknown): unknown {
  if (!isObj(to) || !isObj(from)) return to;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(to))
    out[k] = k in from && isObj(v) && isObj(from[k]) ? mergePatch(from[k], v) : v;
  for (const k of Object.keys(from)) if (!(k in to)) out[k] = null;
  return out;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
