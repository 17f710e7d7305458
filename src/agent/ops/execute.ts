import { isScaleAgentError, KubeApiError, type ErrorCode } from '../../shared/errors.js';
import { OutcomeUnknownError, type KubeClient } from '../kube/client.js';
import type { Logger } from '../../shared/logging.js';
import { exceptionResult } from '../../shared/ops/results.js';
import type { ApplyMode, NormalizedOperation } from '../../shared/ops/types.js';
import { decodeOperation, failureMessage, resultMessage } from '../../shared/ops/wire.js';
import type { OperationResult as WireResult, Operation as WireOperation } from '../../proto/scaleagent/v1/agent.js';
import { cleanupArtifacts } from './cleanup.js';
import { deleteManifest } from './delete.js';
import { deployManifests } from './deploy.js';
import { runJob } from './job.js';
import { patchManifest } from './patch.js';
import { liveGet, liveList, liveLogs } from './read.js';
import { enableDisable } from './traffic.js';
import { pauseRollout, rollingRestart, scaleManifest, undoRollout } from './workload.js';
import type { OpContext } from './context.js';
import { cancelledBy, type CancelPoint } from './cancel.js';

export interface ExecuteOptions {
  signal?: AbortSignal;
  log?: Logger;
  /** Field manager for server-side apply and every write. Default `scale-agent`. */
  fieldManager?: string;
  /** The account's default; manifests may override it by annotation. Default `server-side`. */
  applyMode?: ApplyMode;
  /** Bound on waits inside an operation (objects gone, a CRD becoming served). Default 60 s. */
  waitTimeoutMs?: number;
  /** The id the plugin-server gave the operation; marks the changes a repeat would make again (OpContext). */
  operationId?: string;
  /** An earlier delivery of the id may have run and this process cannot tell (OpContext.sentBefore). */
  sentBefore?: boolean;
  /** Lets a Cancel stop the operation while none of its writes has gone out (cancel.ts); its signal is `signal`'s part. */
  cancel?: CancelPoint;
}

export interface ExecutionResult {
  ok: boolean;
  /**
   * The operation's Clouddriver result object (deploy/delete/patch: OperationResult shape; runJob: plus
   * deployedNamesByLocation and jobStatus; liveGet: {manifest}; liveList: {items}; liveLogs: {log}), null for operations whose
   * Clouddriver result is null (scale, undo, pause, resume, restart, enable, disable), or the EXCEPTION object
   * when `ok` is false.
   */
  result: unknown;
  /** `<apiVersion>/<kind>/<namespace>/<name>` → resourceVersion written ('' = the object is gone). */
  resourceVersions: Record<string, string>;
  error?: string;
  /** SA_ERR_* code of the failure. */
  errorCode?: string;
  /** True when running it again may succeed (API server unreachable, deadline). */
  retryable?: boolean;
  /** Progress lines for the task history, in order. */
  messages: string[];
}

/**
 * Runs one operation against the account's API server. Never throws: every failure comes back as `ok: false`
 * with a message that names what failed (a Forbidden names the verb and the resource).
 */
export async function executeOperation(
  client: KubeClient,
  op: NormalizedOperation,
  options: ExecuteOptions = {},
): Promise<ExecutionResult> {
  const ctx: OpContext = {
    account: op.account,
    kube: options.cancel ? options.cancel.guard(client.retrying()) : client.retrying(),
    discovery: client.discovery,
    signal: options.signal ?? options.cancel?.signal ?? new AbortController().signal,
    log: options.log,
    fieldManager: options.fieldManager ?? 'scale-agent',
    defaultApplyMode: options.applyMode ?? 'server-side',
    defaultNamespace: client.defaultNamespace,
    waitTimeoutMs: options.waitTimeoutMs ?? 60_000,
    messages: [],
    touched: new Map(),
    operationId: options.operationId || undefined,
    sentBefore: options.sentBefore === true,
  };
  const started = Date.now();
  const declined = (): void => {
    if (options.cancel?.declined === undefined) return;
    ctx.messages.push(`Cancel requested (${options.cancel.declined}) after a write went out: ran to its end`);
  };
  try {
    const result = await run(ctx, op);
    declined();
    options.log?.info({ account: op.account, type: op.type, ms: Date.now() - started }, 'operation succeeded');
    return { ok: true, result, resourceVersions: Object.fromEntries(ctx.touched), messages: ctx.messages };
  } catch (e) {
    declined();
    const { code, message, retryable } = classify(e, ctx.signal);
    options.log?.warn({ account: op.account, type: op.type, code, ms: Date.now() - started }, message);
    return {
      ok: false,
      result: exceptionResult(op.type, message, { retryable }),
      resourceVersions: Object.fromEntries(ctx.touched),
      error: message,
      errorCode: `SA_ERR_${code}`,
      retryable,
      messages: ctx.messages,
    };
  }
}

function run(ctx: OpContext, op: NormalizedOperation): Promise<unknown> {
  switch (op.type) {
    case 'deployManifest':
      return deployManifests(ctx, op.payload);
    case 'deleteManifest':
      return deleteManifest(ctx, op.payload);
    case 'patchManifest':
      return patchManifest(ctx, op.payload);
    case 'scaleManifest':
      return scaleManifest(ctx, op.payload);
    case 'undoRolloutManifest':
      return undoRollout(ctx, op.payload);
    case 'pauseRolloutManifest':
      return pauseRollout(ctx, op.payload.target, true);
    case 'resumeRolloutManifest':
      return pauseRollout(ctx, op.payload.target, false);
    case 'rollingRestartManifest':
      return rollingRestart(ctx, op.payload.target);
    case 'enableManifest':
      return enableDisable(ctx, op.payload, true);
    case 'disableManifest':
      return enableDisable(ctx, op.payload, false);
    case 'runJob':
      return runJob(ctx, op.payload);
    case 'cleanupArtifacts':
      return cleanupArtifacts(ctx, op.payload);
    case 'liveGet':
      return liveGet(ctx, op.payload);
    case 'liveList':
      return liveList(ctx, op.payload);
    case 'liveLogs':
      return liveLogs(ctx, op.payload);
  }
}

function classify(e: unknown, signal: AbortSignal): { code: ErrorCode; message: string; retryable: boolean } {
  // Only a cancel before any write aborts with this reason (cancel.ts): nothing was changed, and a run again would
  // undo the cancel.
  const cancelled = cancelledBy(signal);
  if (cancelled) return { code: 'CANCELLED', message: cancelled.message, retryable: false };
  if (e instanceof OutcomeUnknownError) return { code: e.kind, message: e.message, retryable: e.resumable };
  // 429s and 5xx reach an operation only from requests that are safe to send again (the kube client turns them into
  // OutcomeUnknownError otherwise) after its own retries: the operation may be resumed.
  if (e instanceof KubeApiError && (e.status === 429 || e.status >= 500)) {
    return { code: e.kind, message: e.message, retryable: true };
  }
  if (signal.aborted && !(e instanceof KubeApiError)) {
    return {
      code: 'TIMEOUT',
      message: `operation deadline reached: ${(e as Error).message ?? String(e)}`,
      retryable: true,
    };
  }
  if (isScaleAgentError(e))
    return { code: e.kind, message: e.message, retryable: e.kind === 'UNAVAILABLE' || e.kind === 'TIMEOUT' };
  return { code: 'INTERNAL', message: e instanceof Error ? e.message : String(e), retryable: false };
}

// ---- the stream's integration point ----------------------------------------------------------------------------

/**
 * ServerMessage.operation → OperationResult, for the agent's stream: the message is checked against the wire's one
 * shape (shared/ops/wire.ts: a normalized payload, an absolute deadline), then run with that deadline.
 */
export async function executeWireOperation(
  client: KubeClient,
  msg: WireOperation,
  options: ExecuteOptions = {},
): Promise<WireResult> {
  const decoded = decodeOperation(msg, Date.now());
  if (!decoded.ok) return failureMessage(msg, decoded);
  const timeoutMs = decoded.deadlineMs > 0 ? decoded.deadlineMs - Date.now() : 0;
  const signals = [
    options.signal,
    options.cancel?.signal,
    timeoutMs > 0 ? AbortSignal.timeout(timeoutMs) : undefined,
  ].filter((s): s is AbortSignal => !!s);
  const signal = signals.length > 0 ? AbortSignal.any(signals) : undefined;
  const r = await executeOperation(client, decoded.op, {
    ...options,
    operationId: msg.operationId,
    ...(signal ? { signal } : {}),
  });
  return resultMessage(msg.operationId, r);
}
