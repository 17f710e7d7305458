import { redactSecret } from '../../shared/ops/results.js';
import type { KubeObject, LiveGetPayload, LiveListPayload, LiveLogsPayload } from '../../shared/ops/types.js';
import { collectionPath, intentFor, objectPath } from '../kube/resources.js';
import { getObject, withoutManagedFields, type OpContext } from './context.js';

/** Live read of one object (Clouddriver's `GET /manifests` reads live); `manifest: null` when it does not exist. */
export async function liveGet(ctx: OpContext, p: LiveGetPayload): Promise<{ manifest: KubeObject | null }> {
  const r = await ctx.discovery.forKindName(p.target.kind, ctx.signal);
  const obj = await getObject(ctx, r, p.target.location, p.target.name);
  return { manifest: obj ? redactSecret(withoutManagedFields(obj)) : null };
}

export async function liveList(ctx: OpContext, p: LiveListPayload): Promise<{ items: KubeObject[] }> {
  const r = await ctx.discovery.forKindName(p.kind, ctx.signal);
  const list = await ctx.kube.getJson<{ items?: KubeObject[]; apiVersion?: string }>(collectionPath(r, p.location), {
    query: { labelSelector: p.labelSelector, limit: p.limit },
    signal: ctx.signal,
    intent: intentFor('list', r, p.location),
  });
  const apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
  // List items come without apiVersion/kind; put them back so each item stands alone.
  return {
    items: (list.items ?? []).map((o) => redactSecret(withoutManagedFields({ ...o, apiVersion, kind: r.kind }))),
  };
}

/** One container's log as text (Run Job property files), at most `limitBytes` of it, from the start. */
export async function liveLogs(ctx: OpContext, p: LiveLogsPayload): Promise<{ log: string }> {
  const r = await ctx.discovery.forKindName('pod', ctx.signal);
  const log = await ctx.kube.getText(objectPath(r, p.location, p.pod, 'log'), {
    query: { container: p.container, limitBytes: p.limitBytes },
    signal: ctx.signal,
    intent: intentFor('get', r, p.location, p.pod, 'log'),
  });
  return { log };
}
