import { ScaleAgentError } from '../../shared/errors.js';
import { parseFullResourceName, parseKind } from '../../shared/ops/kinds.js';
import { loadBalancersOf } from '../../shared/ops/spinnaker.js';
import type { EnableDisablePayload, KubeObject } from '../../shared/ops/types.js';
import { collectionPath, intentFor } from '../kube/resources.js';
import type { DiscoveredResource as OpResource } from '../kube/discovery.js';
import { escapePointer, getObject, mustGet, note, type OpContext } from './context.js';
import { patchObject } from './patch.js';

/**
 * enableManifest / disableManifest as Clouddriver defines them: for each load balancer (the request's, else the
 * target's `traffic.spinnaker.io/load-balancers`), add (enable) or remove (disable) the Service's selector labels
 * on the target's pod template (or its own labels when it has no template); a ReplicaSet's pods are patched too,
 * so traffic moves now rather than at the next rollout.
 */
export async function enableDisable(ctx: OpContext, p: EnableDisablePayload, enable: boolean): Promise<null> {
  const ref = parseKind(p.target.kind);
  if (ref.known && !ref.known.capabilities.includes('traffic')) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `Resource with kind ${p.target.kind} does not support ${enable ? 'enable' : 'disable'}`,
    );
  }
  const r = await ctx.discovery.forKindName(p.target.kind, ctx.signal);
  const ns = p.target.location;
  const target = await mustGet(ctx, r, ns, p.target.name);
  const lbs = p.loadBalancers ?? loadBalancersOf(target);
  if (lbs.length === 0) {
    note(ctx, `${r.kind} ${p.target.name} has no load balancers; nothing to ${enable ? 'enable' : 'disable'}`);
    return null;
  }
  const selector: Record<string, string> = {};
  const svc = await ctx.discovery.forKindName('service', ctx.signal);
  for (const lb of lbs) {
    const parsed = parseFullResourceName(lb);
    if (!parsed || parsed.kind.known?.name !== 'service') {
      throw new ScaleAgentError('INVALID_INPUT', `load balancer '${lb}' must be named like 'service my-service'`);
    }
    const service = await getObject(ctx, svc, ns, parsed.name);
    if (!service)
      throw new ScaleAgentError('NOT_FOUND', `Load balancer service ${parsed.name} does not exist in namespace ${ns}`);
    Object.assign(selector, (service.spec as { selector?: Record<string, string> } | undefined)?.selector ?? {});
  }
  const hasTemplate = !!(target.spec as { template?: unknown } | undefined)?.template;
  const base = hasTemplate ? '/spec/template/metadata/labels' : '/metadata/labels';
  const current =
    (hasTemplate
      ? (target.spec as { template: { metadata?: { labels?: Record<string, string> } } }).template.metadata?.labels
      : target.metadata.labels) ?? {};
  note(ctx, `${enable ? 'Enabling' : 'Disabling'} ${r.kind} ${p.target.name} for ${lbs.join(', ')}`);
  await patchLabels(
    ctx,
    r,
    ns,
    p.target.name,
    base,
    current,
    hasTemplate && !(target.spec as { template: { metadata?: object } }).template.metadata,
    selector,
    enable,
  );
  if (r.kind === 'ReplicaSet') {
    const pods = await ctx.discovery.forKindName('pod', ctx.signal);
    const list = await ctx.kube.getJson<{ items?: KubeObject[] }>(collectionPath(pods, ns), {
      signal: ctx.signal,
      intent: intentFor('list', pods, ns),
    });
    for (const pod of list.items ?? []) {
      const owned = ((pod.metadata.ownerReferences as { uid?: string }[] | undefined) ?? []).some(
        (o) => o.uid === target.metadata.uid,
      );
      if (!owned || !pod.metadata.name) continue;
      await patchLabels(
        ctx,
        pods,
        ns,
        pod.metadata.name,
        '/metadata/labels',
        pod.metadata.labels ?? {},
        false,
        selector,
        enable,
      );
    }
  }
  return null;
}

async function patchLabels(
  ctx: OpContext,
  r: OpResource,
  ns: string,
  name: string,
  base: string,
  current: Record<string, string>,
  needsMetadata: boolean,
  selector: Record<string, string>,
  enable: boolean,
): Promise<void> {
  const ops: unknown[] = [];
  if (enable) {
    if (needsMetadata) ops.push({ op: 'add', path: base.replace(/\/labels$/, ''), value: {} });
    if (needsMetadata || Object.keys(current).length === 0) ops.push({ op: 'add', path: base, value: {} });
    for (const [k, v] of Object.entries(selector))
      ops.push({ op: 'add', path: `${base}/${escapePointer(k)}`, value: v });
  } else {
    for (const k of Object.keys(selector))
      if (k in current) ops.push({ op: 'remove', path: `${base}/${escapePointer(k)}` });
  }
  if (ops.length === 0) return;
  await patchObject(ctx, r, ns, name, 'json', ops);
}
