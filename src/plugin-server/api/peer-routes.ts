import type { FastifyPluginAsync } from 'fastify';
import { OPERATION_TYPES } from '../../shared/ops/types.js';
import { MIN_EPOCH_DEADLINE_MS } from '../../shared/ops/wire.js';
import { accountFilter, requireWritable } from '../auth/spinnaker-accounts.js';
import type { CacheBarrier } from '../ops/barrier.js';
import type { OperationDispatcher } from '../ops/dispatcher.js';
import { PEER_OPERATIONS_PATH, type PeerAnswer, type PeerRequest } from '../ops/peer-forward.js';

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
  },
} as const;

export interface PeerRouteDeps {
  dispatcher: OperationDispatcher;
  barrier: CacheBarrier;
}

/** The receiving side of ops/peer-forward.ts: run a peer's operation through this replica's stream, then its barrier. */
export const peerRoutes: FastifyPluginAsync<PeerRouteDeps> = async (app, deps) => {
  app.post<{ Body: PeerRequest }>(
    PEER_OPERATIONS_PATH,
    { schema: { body: peerRequestSchema } },
    async (request): Promise<PeerAnswer> => {
      const b = request.body;
      // Peers forward no X-SPINNAKER-ACCOUNTS (the posting replica checked it); a caller sending one is held to it.
      requireWritable(accountFilter(request.headers), [b.account]);
      const outcome = await deps.dispatcher.execute({
        operationId: b.operationId,
        account: b.account,
        type: b.type,
        payload: b.payload,
        deadlineMs: b.deadlineMs,
        // Only this replica's own streams: a peer that lost the account meanwhile says so and the sender looks again.
        localOnly: true,
        agentWaitMs: 0,
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
    },
  );
};
