import type { FastifyInstance } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import { accountFilter, requireWritable } from '../auth/spinnaker-accounts.js';
import { OPERATION_PHASES, type OperationType } from '../../shared/ops/types.js';
import type { BarrierOutcome, CacheBarrier } from './barrier.js';
import type { DispatchOutcome, DispatchRequest, OperationDispatcher } from './dispatcher.js';

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

interface PeerRequest {
  operationId: string;
  account: string;
  type: OperationType;
  payload: unknown;
  timeoutMs?: number;
  cacheWaitMs: number;
}

type PeerAnswer =
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

/** not-held: the peer's agent left it; unreachable: the peer died or cannot be reached (did it run? unknown). */
export type ForwardOutcome = DispatchOutcome | { kind: 'not-held' } | { kind: 'unreachable'; message: string };

/** Sends one operation to the replica holding its account's agent; carries the caller's credentials along. */
export async function forwardOperation(
  baseUrl: string,
  req: DispatchRequest & { cacheWaitMs: number },
  options: { authorization?: string | undefined; answerWithinMs: number },
): Promise<ForwardOutcome> {
  const body: PeerRequest = {
    operationId: req.operationId,
    account: req.account,
    type: req.type,
    payload: req.payload,
    cacheWaitMs: req.cacheWaitMs,
    ...(req.timeoutMs !== undefined ? { timeoutMs: req.timeoutMs } : {}),
  };
  let res: Response;
  try {
    res = await fetch(`${baseUrl.replace(/\/$/, '')}${PEER_OPERATIONS_PATH}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(options.authorization ? { authorization: options.authorization } : {}),
      },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(options.answerWithinMs),
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

const TYPES = new Set<string>(Object.keys(OPERATION_PHASES));

/** The receiving side: run an operation forwarded by a peer through this replica's stream, then its barrier. */
export function registerPeerOperationRoute(
  app: FastifyInstance,
  deps: { dispatcher: OperationDispatcher; barrier: CacheBarrier },
): void {
  app.post<{ Body: PeerRequest }>(PEER_OPERATIONS_PATH, async (request): Promise<PeerAnswer> => {
    const b = request.body as Partial<PeerRequest> | undefined;
    if (
      !b ||
      typeof b.operationId !== 'string' ||
      typeof b.account !== 'string' ||
      typeof b.type !== 'string' ||
      !TYPES.has(b.type) ||
      typeof b.cacheWaitMs !== 'number'
    ) {
      throw new ScaleAgentError('INVALID_INPUT', `${PEER_OPERATIONS_PATH}: operationId, account, type, cacheWaitMs`);
    }
    // Peers forward no X-SPINNAKER-ACCOUNTS (the posting replica checked it); a caller sending one is held to it.
    requireWritable(accountFilter(request.headers), [b.account]);
    const outcome = await deps.dispatcher.execute({
      operationId: b.operationId,
      account: b.account,
      type: b.type,
      payload: b.payload,
      // Only this replica's own streams: a peer that lost the account meanwhile says so and the sender looks again.
      localOnly: true,
      agentWaitMs: 0,
      ...(b.timeoutMs !== undefined ? { timeoutMs: b.timeoutMs } : {}),
    });
    if (outcome.kind === 'failed') return { ...outcome, notHeld: outcome.notHeld };
    const r = outcome.result;
    const barrier = r.ok
      ? await deps.barrier.waitFor(b.account, r.resourceVersions, b.cacheWaitMs)
      : { ok: true as const, waitedFor: [], notCached: [] };
    return {
      kind: 'result',
      agentId: outcome.agentId,
      ok: r.ok,
      error: r.error,
      resultJson: Buffer.from(r.resultJson).toString('base64'),
      resourceVersions: r.resourceVersions,
      barrier,
    };
  });
}
