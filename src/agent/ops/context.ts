import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../shared/logging.js';
import type { ApplyMode, KubeObject } from '../../shared/ops/types.js';
import { resourceKey } from '../../shared/ops/results.js';
import type { Discovery, DiscoveredResource as OpResource } from '../kube/discovery.js';
import type { KubeRequester } from '../kube/client.js';
import { intentFor, objectPath } from '../kube/resources.js';
import { isKubeStatus as isStatus, KubeApiError } from '../../shared/errors.js';

/** Everything one running operation needs; built by executeOperation. */
export interface OpContext {
  account: string;
  /** The account's API server, retrying transient failures (429, 5xx, resets) with backoff. */
  kube: KubeRequester;
  discovery: Discovery;
  signal: AbortSignal;
  log: Logger | undefined;
  fieldManager: string;
  defaultApplyMode: ApplyMode;
  /** Namespace of the kubeconfig context, for manifests that name none. */
  defaultNamespace: string;
  /** Bound on waits (objects gone, CRDs served). */
  waitTimeoutMs: number;
  /** Lines for the task history ("Submitting manifest deployment web ..."). */
  messages: string[];
  /** resourceKey → resourceVersion ('' = gone) of every object the operation wrote. */
  touched: Map<string, string>;
  /**
   * `<taskId>.<index>` when the plugin-server sent the operation: creates, JSON patches, restarts and undos write it
   * into the cluster so that a repeat after an agent restart does not apply them twice (once-in-cluster.ts).
   * Undefined: no such mark.
   */
  operationId: string | undefined;
  /**
   * An earlier delivery of this id may have run and this process cannot tell whether it did
   * (`Operation.sent_before_on_sessions`, decided in operations.ts; an id it remembers never gets here): a change that
   * would apply twice runs only when its mark shows the earlier delivery applied it (once-in-cluster.ts
   * refuseUnmarkedRepeat).
   */
  sentBefore: boolean;
}

export function note(ctx: OpContext, message: string): void {
  ctx.messages.push(message);
  ctx.log?.debug({ account: ctx.account }, message);
}

export function track(ctx: OpContext, obj: KubeObject): void {
  const rv = obj.metadata.resourceVersion;
  ctx.touched.set(resourceKey(obj), typeof rv === 'string' ? rv : '');
}

export function trackGone(ctx: OpContext, r: OpResource, namespace: string | undefined, name: string): void {
  const apiVersion = r.group ? `${r.group}/${r.version}` : r.version;
  ctx.touched.set(
    resourceKey({ apiVersion, kind: r.kind, metadata: { name, namespace: r.namespaced ? namespace : '' } }),
    '',
  );
}

/** GET one object; undefined when it does not exist. */
export async function getObject(
  ctx: OpContext,
  r: OpResource,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject | undefined> {
  try {
    return await ctx.kube.getJson<KubeObject>(objectPath(r, namespace, name), {
      signal: ctx.signal,
      intent: intentFor('get', r, namespace, name),
    });
  } catch (e) {
    if (isStatus(e, 404)) return undefined;
    throw e;
  }
}

/** Like getObject, but a missing object fails the operation with a message naming it. */
export async function mustGet(
  ctx: OpContext,
  r: OpResource,
  namespace: string | undefined,
  name: string,
): Promise<KubeObject> {
  const obj = await getObject(ctx, r, namespace, name);
  if (!obj) {
    throw new KubeApiError(
      404,
      'NotFound',
      `${r.kind} ${name}${namespace && r.namespaced ? ` in namespace ${namespace}` : ''} not found`,
      intentFor('get', r, namespace, name),
    );
  }
  return obj;
}

/**
 * Retries optimistic-concurrency failures (409 Conflict: the object changed between our read and write;
 * AlreadyExists: someone created it between our 404 and our create). Each attempt re-reads.
 */
export async function retryConflicts<T>(ctx: OpContext, what: string, fn: () => Promise<T>, attempts = 6): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (!isStatus(e, 409) || i >= attempts || ctx.signal.aborted) throw e;
      note(ctx, `Conflict on ${what} (${e.message}); retrying (${i}/${attempts - 1})`);
      await sleep(50 * 2 ** i + Math.random() * 50, undefined, { signal: ctx.signal });
    }
  }
}

/** Polls `check` until it returns true or the bound passes; false on timeout. */
export async function waitFor(ctx: OpContext, timeoutMs: number, check: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  let delay = 50;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= until || ctx.signal.aborted) return false;
    await sleep(Math.min(delay, Math.max(0, until - Date.now())), undefined, { signal: ctx.signal }).catch(
      () => undefined,
    );
    delay = Math.min(delay * 2, 1000);
  }
}

/** RFC 6901: "~" → "~0", "/" → "~1" (keys like app.kubernetes.io/name in a JSON pointer). */
export const escapePointer = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** Objects in results go without managedFields: they are large, and nobody downstream reads them. */
export function withoutManagedFields(obj: KubeObject): KubeObject {
  if (!('managedFields' in obj.metadata)) return obj;
  const { managedFields: _mf, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}
