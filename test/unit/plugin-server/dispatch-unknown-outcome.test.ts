/**
 * An operation sent to an agent that then disconnects (or never answers) may or may not have run. The task fails,
 * and whether Orca may resume it (retryable) depends on whether a repeat is safe: a JSON patch is not (its mark names
 * only the object's last marked patch, so a resume appends twice — what the randomized schedules' seed 8 caught when
 * the active agent was SIGKILLed mid-append); a merge patch converges and stays retryable. A real registry on the
 * memory store holds the account for a session the test drives (it stands in for an agent's stream).
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { OperationDispatcher, type OperationSession } from '../../../src/plugin-server/ops/index.js';
import type { PatchStrategy } from '../../../src/shared/ops/types.js';
import type { Operation } from '../../../src/shared/proto.js';
import { patchOperation } from '../../infra/records.js';
import { account } from './helpers.js';

async function setUp(operationTimeoutMs = 60_000) {
  const log = pino({ level: 'silent' });
  const store = new MemoryCacheStore();
  await store.init();
  const accounts = new AccountRegistry(store, log, { gracePeriodMs: 60_000 });
  const sent: Operation[] = [];
  const session: OperationSession = { id: 's1', agentId: 'agent-1', open: true, sendOperation: (op) => sent.push(op) };
  const registered = await accounts.register({ id: session.id, agentId: session.agentId }, account('dev'));
  expect(registered.accepted).toBe(true);
  const dispatcher = new OperationDispatcher({
    accounts,
    session: (id) => (id === session.id ? session : undefined),
    log,
    options: { agentWaitMs: 0, operationTimeoutMs },
  });
  return { dispatcher, sent };
}

function patch(strategy: PatchStrategy) {
  return { operationId: `op-${strategy}`, ...patchOperation(strategy) };
}

describe('an operation whose agent went away after it was sent', () => {
  it('a JSON patch fails as not retryable and says to check the object; a merge patch stays retryable', async () => {
    for (const [strategy, retryable] of [
      ['json', false],
      ['merge', true],
    ] as const) {
      const { dispatcher, sent } = await setUp();
      const outcome = dispatcher.execute(patch(strategy));
      await expect.poll(() => sent.length).toBe(1);
      dispatcher.onSessionClosed('s1');
      const o = await outcome;
      expect(o, strategy).toMatchObject({ kind: 'failed', retryable });
      expect(o.kind === 'failed' && o.message, strategy).toMatch(/disconnected while running patchManifest/);
      if (!retryable) expect(o.kind === 'failed' && o.message).toMatch(/not retryable: check the object/);
      // Never sent a second time, retryable or not: not idempotent.
      expect(sent).toHaveLength(1);
    }
  });

  it('a JSON patch the agent never answers fails as not retryable too', async () => {
    const { dispatcher, sent } = await setUp(200);
    const o = await dispatcher.execute(patch('json'));
    expect(sent).toHaveLength(1);
    expect(o).toMatchObject({ kind: 'failed', retryable: false });
    expect(o.kind === 'failed' && o.message).toMatch(/did not answer patchManifest/);
  });
});
