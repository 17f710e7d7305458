import type { FastifyPluginAsync } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import { OPERATION_TYPES } from '../../shared/ops/types.js';
import { MIN_EPOCH_DEADLINE_MS } from '../../shared/ops/wire.js';
import { accountFilter, requireWritable } from '../auth/spinnaker-accounts.js';
import type { CacheBarrier } from '../ops/barrier.js';
import type { OperationDispatcher } from '../ops/dispatcher.js';
import { ForwardedRuns, runKey } from '../ops/forwarded-runs.js';
import {
  PEER_CANCEL_PATH,
  PEER_OPERATIONS_PATH,
  PEER_TASK_CANCEL_PATH,
  type PeerAnswer,
  type PeerRequest,
} from '../ops/peer-forward.js';

/**
 * A forward from a peer of an older version (which sent `timeoutMs`, a duration, and no `deadlineMs`) fails this
 * schema with a 400 naming `deadlineMs`, which that peer reports as the operation's failure (docs/upgrading.md).
 */
const peerRequestSchema = {
  type: 'object',
  required: ['operationId', 'account', 'type', 'payload', 'deadlineMs', 'cacheWaitMs'],
  properties: {
    operationId: { type: 'string', minLength: 1 },
    account: { type: 'string', minLength: 1 },
    type: { type: 'string', enum: [...OPERATION_TYPES] },
    payload: { type: 'object' },
    deadlineMs: { type: 'integer', minimum: MIN_EPOCH_DEADLINE_MS },
    cacheWaitMs: { type: 'integer', minimum: 0 },
    sentBeforeOnSessions: { type: 'array', items: { type: 'string' } },
  },
} as const;

const peerCancelSchema = {
  type: 'object',
  required: ['operationId', 'reason'],
  properties: { operationId: { type: 'string', minLength: 1 }, reason: { type: 'string', maxLength: 1000 } },
} as const;

const peerTaskCancelSchema = {
  type: 'object',
  required: ['taskId', 'requestedBy'],
  properties: { taskId: { type: 'string', minLength: 1 }, requestedBy: { type: 'string', maxLength: 1000 } },
} as const;

/** Answers kept for a forward sent again (the sender timed out waiting, then retried an idempotent operation). */
const ANSWERS_KEPT = 1000;

/**
 * The receiving side of ops/peer-forward.ts: run a peer's operation through this replica's stream, then its barrier.
 * Only replicas reach it (auth/admin-auth.ts, the peer secret). The operation must be one of a task in the shared
 * task store, for the account it names, and not finished: the task record the sender wrote is the operation's
 * record, and nothing runs without one. The same operation id forwarded again joins the run under way, or gets the
 * answer it gave, so it runs once (a resumed task's operation, queued again, runs again).
 */
export interface PeerRouteDeps {
  dispatcher: OperationDispatcher;
  barrier: CacheBarrier;
  /** The task store's record of an operation (ops/task-runner.ts operation()). */
  operation(operationId: string): Promise<{ account: string; state: string; queuedAt: number } | undefined>;
  /** TaskRunner.cancel of a task this replica runs, never passed on again (localOnly). */
  cancelTask(id: string, requestedBy: string): Promise<{ cancelling: boolean; accounts: string[] } | undefined>;
}

export const peerRoutes: FastifyPluginAsync<PeerRouteDeps> = async (app, deps) => {
  const answers = new Map<string, Promise<PeerAnswer>>();
  /** Forwarded operations running here: what a peer's cancel aborts (DispatchRequest.signal), even one not here yet. */
  const runs = new ForwardedRuns();
  app.post<{ Body: PeerRequest }>(
    PEER_OPERATIONS_PATH,
    { schema: { body: peerRequestSchema } },
    async (request): Promise<PeerAnswer> => {
      const b = request.body;
      // Peers forward no X-SPINNAKER-ACCOUNTS (the posting replica checked it); a caller sending one is held to it.
      requireWritable(accountFilter(request.headers), [b.account]);
      const record = await deps.operation(b.operationId);
      if (!record || record.account !== b.account) {
        throw new ScaleAgentError(
          'NOT_FOUND',
          `operation ${b.operationId} on account ${b.account} is no operation of a task in the task store: ` +
            'a replica forwards only operations of tasks it created',
        );
      }
      if (record.state === 'succeeded' || record.state === 'failed') {
        throw new ScaleAgentError('CONFLICT', `operation ${b.operationId} has already ${record.state}`);
      }
      // Keyed by when the record was queued too: a resumed task's operation is queued anew under the same id and runs.
      const key = runKey(b.operationId, record.queuedAt);
      const seen = answers.get(key);
      if (seen) return seen;
      // A run that did not reach the agent is not kept: the sender may try again once the account is held here.
      const forget = (): void => void answers.delete(key);
      const answer = run(b, key).then(
        (a) => {
          if (a.kind === 'failed') forget();
          return a;
        },
        (e: unknown) => {
          forget();
          throw e;
        },
      );
      answers.set(key, answer);
      // Bounded: the oldest answers go first (a retry comes within the sender's deadline, long before 1000 more).
      for (const id of answers.keys()) {
        if (answers.size <= ANSWERS_KEPT) break;
        answers.delete(id);
      }
      return answer;
    },
  );

  // A peer's task was cancelled while its operation runs here: not sent yet, it is not sent; sent, a Cancel follows it
  // down the agent's stream (DispatchRequest.signal, ops/dispatcher.ts).
  app.post<{ Body: { operationId: string; reason: string } }>(
    PEER_CANCEL_PATH,
    { schema: { body: peerCancelSchema } },
    async (request) => {
      const { operationId, reason } = request.body;
      const record = await deps.operation(operationId);
      if (!record)
        throw new ScaleAgentError('NOT_FOUND', `operation ${operationId} is no operation of a task in the task store`);
      requireWritable(accountFilter(request.headers), [record.account]);
      if (record.state === 'succeeded' || record.state === 'failed') return { cancelled: false };
      // Also when its forward has not arrived yet (the two requests race): that forward then starts cancelled.
      runs.cancel(runKey(operationId, record.queuedAt), reason);
      return { cancelled: true };
    },
  );

  // A task this replica runs, cancelled through a peer (the request reached it): cancelled here, as asked there.
  app.post<{ Body: { taskId: string; requestedBy: string } }>(
    PEER_TASK_CANCEL_PATH,
    { schema: { body: peerTaskCancelSchema } },
    async (request) => {
      const { taskId, requestedBy } = request.body;
      const r = await deps.cancelTask(taskId, requestedBy);
      if (!r) throw new ScaleAgentError('NOT_FOUND', `Task not found (id: ${taskId})`);
      return { cancelling: r.cancelling };
    },
  );

  async function run(b: PeerRequest, key: string): Promise<PeerAnswer> {
    const forwarded = runs.start(key);
    const outcome = await deps.dispatcher
      .execute({
        operationId: b.operationId,
        account: b.account,
        type: b.type,
        payload: b.payload,
        deadlineMs: b.deadlineMs,
        ...(b.sentBeforeOnSessions ? { sentBeforeOnSessions: b.sentBeforeOnSessions } : {}),
        // Only this replica's own streams: a peer that lost the account meanwhile says so and the sender looks again.
        localOnly: true,
        agentWaitMs: 0,
        signal: forwarded.signal,
      })
      .finally(() => forwarded.end());
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
  }
};
