import { labelSelectorString } from '../../shared/ops/label-selector.js';
import { deleteResult, type OperationResultObject } from '../../shared/ops/results.js';
import type { DeletePayload, KubeObject, PropagationPolicy } from '../../shared/ops/types.js';
import { collectionPath, intentFor, objectPath } from '../kube/resources.js';
import type { DiscoveredResource as OpResource } from '../kube/discovery.js';
import { getObject, note, track, trackGone, waitFor, type OpContext } from './context.js';
import { isKubeStatus as isStatus } from '../../shared/errors.js';

interface DeleteOptions {
  propagationPolicy?: PropagationPolicy;
  gracePeriodSeconds?: number;
}

/**
 * Deletes one object. Returns undefined when it did not exist, else the object as the API server answered the
 * DELETE (still present with a deletionTimestamp while finalizers run, e.g. foreground cascading).
 */
async function deleteOne(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  name: string,
  opts: DeleteOptions,
): Promise<{ uid: string | undefined } | undefined> {
  const body: Record<string, unknown> = { apiVersion: 'v1', kind: 'DeleteOptions' };
  if (opts.propagationPolicy) body.propagationPolicy = opts.propagationPolicy;
  if (opts.gracePeriodSeconds !== undefined) body.gracePeriodSeconds = opts.gracePeriodSeconds;
  try {
    const answer = await ctx.kube.request<KubeObject | { kind: 'Status'; details?: { uid?: string } }>(
      'DELETE',
      objectPath(r, ns, name),
      { body, signal: ctx.signal, intent: intentFor('delete', r, ns, name) },
    );
    if (answer.kind === 'Status') return { uid: (answer as { details?: { uid?: string } }).details?.uid };
    return { uid: (answer as KubeObject).metadata.uid as string | undefined };
  } catch (e) {
    if (isStatus(e, 404)) return undefined;
    throw e;
  }
}

/** True when the object (that uid) is gone; tracks its final state either way. */
async function waitGone(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  name: string,
  uid: string | undefined,
  timeoutMs: number,
): Promise<boolean> {
  let last: KubeObject | undefined;
  const gone = await waitFor(ctx, timeoutMs, async () => {
    last = await getObject(ctx, r, ns, name);
    return !last || (uid !== undefined && last.metadata.uid !== uid);
  });
  if (gone) trackGone(ctx, r, ns, name);
  else if (last) track(ctx, last);
  return gone;
}

export async function deleteAndWait(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  name: string,
  opts: DeleteOptions,
  timeoutMs: number,
): Promise<boolean> {
  const deleted = await deleteOne(ctx, r, ns, name, opts);
  if (!deleted) return true;
  return waitGone(ctx, r, ns, name, deleted.uid, timeoutMs);
}

export async function deleteManifest(ctx: OpContext, p: DeletePayload): Promise<OperationResultObject> {
  for (const w of p.warnings) note(ctx, w);
  const opts: DeleteOptions = {};
  if (p.propagationPolicy) opts.propagationPolicy = p.propagationPolicy;
  if (p.gracePeriodSeconds !== undefined) opts.gracePeriodSeconds = p.gracePeriodSeconds;
  const targets: { r: OpResource; name: string }[] = [];
  if (p.target) {
    targets.push({ r: await ctx.discovery.forKindName(p.target.kind, ctx.signal), name: p.target.name });
  } else {
    const selector = labelSelectorString(p.labelSelectors);
    for (const kind of p.kinds) {
      const r = await ctx.discovery.forKindName(kind, ctx.signal);
      const list = await ctx.kube.getJson<{ items?: KubeObject[] }>(collectionPath(r, p.location), {
        query: { labelSelector: selector || undefined },
        accept: 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json',
        signal: ctx.signal,
        intent: intentFor('list', r, p.location),
      });
      for (const o of list.items ?? []) if (o.metadata.name) targets.push({ r, name: o.metadata.name });
    }
    note(
      ctx,
      `Selected ${targets.length} object(s) of ${p.kinds.join(', ')}${selector ? ` matching ${selector}` : ''}`,
    );
  }
  const deleted: { r: OpResource; name: string; uid: string | undefined }[] = [];
  for (const t of targets) {
    const d = await deleteOne(ctx, t.r, p.location, t.name, opts);
    if (d) {
      deleted.push({ ...t, uid: d.uid });
      note(
        ctx,
        `Deleted ${t.r.kind} ${t.name}${opts.propagationPolicy ? ` (propagationPolicy ${opts.propagationPolicy})` : ''}`,
      );
    } else {
      note(ctx, `${t.r.kind} ${t.name} was already gone`);
      trackGone(ctx, t.r, p.location, t.name);
    }
  }
  if (p.waitTimeoutMs > 0) {
    const until = Date.now() + p.waitTimeoutMs;
    for (const d of deleted) {
      const gone = await waitGone(ctx, d.r, p.location, d.name, d.uid, Math.max(0, until - Date.now()));
      if (!gone)
        note(ctx, `${d.r.kind} ${d.name} is still terminating after ${p.waitTimeoutMs} ms (finalizers or dependents)`);
    }
  } else {
    for (const d of deleted) trackGone(ctx, d.r, p.location, d.name);
  }
  return deleteResult(
    deleted.map((d) => ({
      apiVersion: d.r.group ? `${d.r.group}/${d.r.version}` : d.r.version,
      kind: d.r.kind,
      metadata: { name: d.name, namespace: d.r.namespaced ? p.location : '' },
    })),
    p.location,
  );
}
