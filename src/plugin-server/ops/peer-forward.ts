import type { OperationType } from '../../shared/ops/types.js';
import { ON_BEHALF_OF_HEADER } from '../auth/peer-secret.js';
import type { BarrierOutcome } from './barrier.js';
import type { DispatchRequest, ForwardOutcome } from './dispatcher.js';

/**
 * Operations for an account whose agent is connected to another replica are forwarded to that replica's REST
 * address (recorded with its lease), which sends it down the agent's stream and waits for its own cache to hold
 * what the operation wrote before answering. The replica holding the stream is the one writing the account's
 * cache, so its barrier is event-driven (ObjectCache.onApplied) and, once it answers, the writes are committed to the
 * shared store: the asking replica reads them from there with no polling of the cache tables. Chosen over a queue
 * claimed with SELECT … FOR UPDATE SKIP LOCKED because a queue needs the holder to poll (or be woken by a second
 * channel) and its result to be polled back, costing latency on every operation for nothing forwarding lacks.
 */
export const PEER_OPERATIONS_PATH = '/internal/operations';
/** A cancel of an operation forwarded earlier: the peer sends a proto Cancel down the stream it sent it on. */
export const PEER_CANCEL_PATH = '/internal/operations/cancel';
/** A cancel of a task the peer runs (TaskRunner.cancel there). */
export const PEER_TASK_CANCEL_PATH = '/internal/tasks/cancel';

/** The body a replica posts to its peer (checked by the route's schema, api/peer-routes.ts). */
export interface PeerRequest {
  operationId: string;
  account: string;
  type: OperationType;
  /** The normalized payload (shared/ops/types.ts PayloadByType), as the asking replica parsed it. */
  payload: unknown;
  /** Epoch milliseconds: `Operation.deadline_ms`, sent down the peer's stream unchanged (shared/ops/wire.ts). */
  deadlineMs: number;
  /** How long the peer waits for its cache to hold what the operation wrote. */
  cacheWaitMs: number;
  /** `Operation.sent_before_on_sessions`, sent down the peer's stream unchanged; absent from older peers. */
  sentBeforeOnSessions?: string[];
}

export type PeerAnswer =
  | {
      kind: 'result';
      agentId: string;
      ok: boolean;
      error: string;
      resultJson: string;
      resourceVersions: Record<string, string>;
      barrier: BarrierOutcome;
    }
  | { kind: 'failed'; message: string; retryable: boolean; notHeld?: boolean };

/**
 * Passes a task's cancel to the replica that runs one of its operations on its agent's stream (PEER_CANCEL_PATH),
 * authenticated as a replica. Throws when the peer cannot be reached or refuses: the operation then runs to its end.
 */
export async function cancelAtPeer(
  baseUrl: string,
  operationId: string,
  reason: string,
  options: { peerAuthorization: string | undefined },
): Promise<void> {
  await postToPeer(baseUrl, PEER_CANCEL_PATH, { operationId, reason }, options);
}

/** Passes a task's cancel to the replica running the task (PEER_TASK_CANCEL_PATH); its answer: is it cancelling? */
export async function cancelTaskAtPeer(
  baseUrl: string,
  taskId: string,
  requestedBy: string,
  options: { peerAuthorization: string | undefined },
): Promise<{ cancelling: boolean }> {
  return (await postToPeer(baseUrl, PEER_TASK_CANCEL_PATH, { taskId, requestedBy }, options)) as {
    cancelling: boolean;
  };
}

async function postToPeer(
  baseUrl: string,
  path: string,
  body: unknown,
  options: { peerAuthorization: string | undefined },
): Promise<unknown> {
  const res = await postPeer(baseUrl, path, body, { ...options, timeoutMs: 10_000 });
  const text = await res.text();
  if (!res.ok) throw new Error(`replica at ${baseUrl} refused the cancel (HTTP ${res.status}): ${text.slice(0, 300)}`);
  return JSON.parse(text) as unknown;
}

/** One POST to a peer replica's internal route, authenticated as a replica; `onBehalfOf` names the caller. */
function postPeer(
  baseUrl: string,
  path: string,
  body: unknown,
  options: { peerAuthorization: string | undefined; onBehalfOf?: string | undefined; timeoutMs: number },
): Promise<Response> {
  return fetch(`${baseUrl.replace(/\/$/, '')}${path}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(options.peerAuthorization ? { authorization: options.peerAuthorization } : {}),
      ...(options.onBehalfOf ? { [ON_BEHALF_OF_HEADER]: options.onBehalfOf } : {}),
    },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(options.timeoutMs),
  });
}

/**
 * Sends one operation to the replica holding its account's agent, authenticated as a replica (the peer secret,
 * auth/peer-secret.ts): this replica already authenticated and authorized the caller, whom it names for the peer's
 * audit log, so a Spinnaker call without a token (from a trusted network) runs on the peer as it would here.
 */
export async function forwardOperation(
  baseUrl: string,
  req: DispatchRequest & { cacheWaitMs: number; deadlineMs: number },
  options: { peerAuthorization: string | undefined; answerWithinMs: number },
): Promise<ForwardOutcome> {
  const body: PeerRequest = {
    operationId: req.operationId,
    account: req.account,
    type: req.type,
    payload: req.payload,
    deadlineMs: req.deadlineMs,
    cacheWaitMs: req.cacheWaitMs,
    ...(req.sentBeforeOnSessions?.length ? { sentBeforeOnSessions: req.sentBeforeOnSessions } : {}),
  };
  let res: Response;
  try {
    res = await postPeer(baseUrl, PEER_OPERATIONS_PATH, body, {
      peerAuthorization: options.peerAuthorization,
      onBehalfOf: req.requestedBy,
      timeoutMs: options.answerWithinMs,
    });
  } catch (e) {
    // The peer died or is unreachable: whether the operation ran is unknown (the dispatcher decides on a retry).
    return { kind: 'unreachable', message: `replica at ${baseUrl} did not answer: ${(e as Error).message}` };
  }
  const text = await res.text();
  if (!res.ok) {
    return {
      kind: 'failed',
      retryable: res.status >= 500,
      message: `replica at ${baseUrl} refused the operation (HTTP ${res.status}): ${text.slice(0, 300)}`,
    };
  }
  const answer = JSON.parse(text) as PeerAnswer;
  if (answer.kind === 'failed') {
    return answer.notHeld
      ? { kind: 'not-held' }
      : { kind: 'failed', message: answer.message, retryable: answer.retryable };
  }
  return {
    kind: 'result',
    agentId: answer.agentId,
    result: {
      operationId: req.operationId,
      ok: answer.ok,
      error: answer.error,
      resultJson: Buffer.from(answer.resultJson, 'base64'),
      resourceVersions: answer.resourceVersions,
    },
    barrier: answer.barrier,
  };
}
