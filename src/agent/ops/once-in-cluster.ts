/**
 * Once per operation id across agent restarts, for the changes that a repeat would make again: the requests that can
 * apply twice (`mayApplyTwice` in kube/client.ts: creates, JSON patches) and the patches an operation computes from
 * the state it finds (a rolling restart's new timestamp, an undo's "previous revision"). The in-memory once (once.ts)
 * answers a repeat only while the process lives; an agent killed after its change reached the API server and before
 * its result reached the plugin-server gets the same id again from Orca's resume, in a new process. So the mark that
 * an operation ran is written into the cluster by the very request that makes the change: a created object carries
 * its operation's id, a patched object the id of the last marked patch it took. Change and mark succeed or fail
 * together, so a repeat that finds the mark knows the change happened, and one that does not find it knows it did not
 * (docs/clouddriver-compatibility.md, "Operations sent again").
 */
import { createHash } from 'node:crypto';
import { isKubeStatus, ScaleAgentError } from '../../shared/errors.js';
import { ANNOTATIONS, LABELS } from '../../shared/ops/spinnaker.js';
import type { KubeObject } from '../../shared/ops/types.js';
import type { DiscoveredResource as OpResource } from '../kube/discovery.js';
import { collectionPath, intentFor } from '../kube/resources.js';
import { escapePointer, getObject, mustGet, note, type OpContext } from './context.js';

/**
 * The label value naming one create of one operation: the id and the manifest's place in the operation's deploy
 * order (stable for the same payload), so two generateName manifests of one kind in one operation stay apart.
 * 40 hex digits fit a label value whatever the id contains.
 */
export function operationKey(operationId: string, index: number): string {
  return createHash('sha256').update(`${operationId}#${index}`).digest('hex').slice(0, 40);
}

/** Puts the operation's mark on a manifest about to be created (label to find it by, annotation with the full id). */
export function markCreation(manifest: KubeObject, operationId: string, index: number): void {
  (manifest.metadata.labels ??= {})[LABELS.operationKey] = operationKey(operationId, index);
  (manifest.metadata.annotations ??= {})[ANNOTATIONS.operationId] = operationId;
}

/**
 * The object a previous run of this operation created from this (marked) manifest, if it exists: by name for a
 * named manifest, else by label in its namespace. A manifest without a mark was not sent under an operation id.
 * An account that may not list the kind creates as before (the mark cannot be looked for, so a repeat is not caught).
 */
export async function earlierCreation(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  manifest: KubeObject,
): Promise<KubeObject | undefined> {
  const key = manifest.metadata.labels?.[LABELS.operationKey];
  const id = manifest.metadata.annotations?.[ANNOTATIONS.operationId];
  if (!key || !id) return undefined;
  const ours = (o: KubeObject | undefined): boolean =>
    o?.metadata.labels?.[LABELS.operationKey] === key && o.metadata.annotations?.[ANNOTATIONS.operationId] === id;
  if (manifest.metadata.name) {
    const live = await getObject(ctx, r, ns, manifest.metadata.name);
    return ours(live) ? live : undefined;
  }
  try {
    const list = await ctx.kube.getJson<{ items?: KubeObject[] }>(collectionPath(r, ns), {
      query: { labelSelector: `${LABELS.operationKey}=${key}` },
      signal: ctx.signal,
      intent: intentFor('list', r, ns),
    });
    const found = (list.items ?? []).find(ours);
    // List items come without apiVersion and kind; the result names the object by them.
    return found && { ...found, apiVersion: manifest.apiVersion, kind: manifest.kind };
  } catch (e) {
    if (!isKubeStatus(e, 403)) throw e;
    note(ctx, `Cannot list ${r.kind} to find an earlier run of operation ${id}: creating without that check`);
    return undefined;
  }
}

/**
 * The object a marked change is about to patch, read to look for the mark; undefined (noted) when the account may
 * patch but not read it: the change then goes unmarked, as before.
 */
export async function readForMark(
  ctx: OpContext,
  r: OpResource,
  ns: string | undefined,
  name: string,
): Promise<KubeObject | undefined> {
  try {
    return await mustGet(ctx, r, ns, name);
  } catch (e) {
    if (!isKubeStatus(e, 403)) throw e;
    note(ctx, `Cannot read ${r.kind} ${name}: the change carries no mark of operation ${ctx.operationId}`);
    return undefined;
  }
}

/** Whether the object already took this operation's change (the patch wrote the mark with it); noted when so. */
export function tookEarlier(ctx: OpContext, live: KubeObject | undefined): boolean {
  const id = ctx.operationId;
  if (!id || live?.metadata.annotations?.[ANNOTATIONS.lastOperationId] !== id) return false;
  note(ctx, `${live.kind} ${live.metadata.name} already took this change (an earlier run of operation ${id})`);
  return true;
}

/**
 * Refuses a change that would apply twice when the operation was delivered before (`ctx.sentBefore`) and its mark is
 * not on the object: the earlier delivery may have applied it and its mark since been replaced by another marked
 * patch of the same object (the mark names only the last one), or the change could not carry one. Failed as not
 * retryable: only someone looking at the object can tell. Seen in the randomized fault schedules: the agent holding
 * the account (or the replica waiting for its answer) killed mid-append, and Orca's resume appended again.
 */
export function refuseUnmarkedRepeat(ctx: OpContext, what: string): void {
  if (!ctx.sentBefore) return;
  throw new ScaleAgentError(
    'CONFLICT',
    `${what}: operation ${ctx.operationId ?? ''} was sent before and its outcome never came back; the object does ` +
      'not carry its mark, so the earlier delivery may have applied it (a JSON patch run twice applies twice): ' +
      'it is not run again and not retryable: check the object before running the operation again',
  );
}

/**
 * A merge or strategic patch carrying the operation's mark. Such patches merge `metadata.annotations` key by key,
 * creating the map when it is missing, so no precondition is needed.
 */
export function markedMergePatch(ctx: OpContext, body: object): object {
  if (!ctx.operationId) return body;
  const { metadata } = body as { metadata?: { annotations?: Record<string, unknown> } };
  return {
    ...body,
    metadata: {
      ...metadata,
      annotations: { ...metadata?.annotations, [ANNOTATIONS.lastOperationId]: ctx.operationId },
    },
  };
}

interface JsonPatchOp {
  op?: unknown;
  path?: unknown;
  from?: unknown;
}

/**
 * The JSON patch with the operation's mark added after the caller's operations, or undefined when those rewrite
 * `metadata.annotations` (or a parent of it) as a whole: whether the map then exists is not known without applying
 * the patch, and a mark that fails would fail a valid patch. When the live object has no annotations, the map is
 * created, and the patch is made conditional on the resourceVersion read (a 409 if the object changed meanwhile, so a
 * map created in between is not overwritten).
 */
export function markedJsonPatch(ops: unknown[], live: KubeObject, operationId: string): unknown[] | undefined {
  const whole = new Set(['', '/metadata', '/metadata/annotations']);
  const rewritesMap = ops.some((o) => {
    const { path, from } = (o ?? {}) as JsonPatchOp;
    return whole.has(String(path)) || (from !== undefined && whole.has(String(from)));
  });
  if (rewritesMap) return undefined;
  const annotations = live.metadata.annotations as unknown;
  if (typeof annotations === 'object' && annotations !== null) {
    return [
      ...ops,
      { op: 'add', path: `/metadata/annotations/${escapePointer(ANNOTATIONS.lastOperationId)}`, value: operationId },
    ];
  }
  return [
    ...ops,
    { op: 'replace', path: '/metadata/resourceVersion', value: live.metadata.resourceVersion },
    { op: 'add', path: '/metadata/annotations', value: { [ANNOTATIONS.lastOperationId]: operationId } },
  ];
}

/**
 * Whether a request body is a manifest marked for creation (markCreation): its sender looks for an object with that
 * mark before creating (earlierCreation), so a resumed operation does not create it twice, and an unknown outcome
 * may be resumed. A JSON patch's mark is not enough for that: it names only the last marked patch of the object, and
 * with other operations patching the same object meanwhile, a resume would apply it again (the fault suite's cut
 * API-server link did that to 7 of 49 appends when such patches were resumable).
 */
export function carriesMark(body: unknown): boolean {
  const m = (body as KubeObject | undefined)?.metadata;
  return Boolean(m?.labels?.[LABELS.operationKey] && m.annotations?.[ANNOTATIONS.operationId]);
}
