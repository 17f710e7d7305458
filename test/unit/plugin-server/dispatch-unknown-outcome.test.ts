/**
 * An operation sent to an agent that then disconnects (or never answers) may or may not have run. It is not sent
 * again unless idempotent; its task fails as retryable, and Orca's resume sends it again naming the session the
 * unanswered attempt went out on (`Operation.sent_before_on_sessions`), so that the agent can tell a delivery that
 * never arrived from one that may have run: the agent, not the plugin-server, decides whether a repeat is safe (an
 * unmarked JSON patch is refused there). A real registry on the memory store holds the account for a session the
 * test drives (it stands in for an agent's stream).
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
  const cancels: { operationId: string; reason: string }[] = [];
  const session: OperationSession = {
    id: 's1',
    agentId: 'agent-1',
    open: true,
    sendOperation: (op) => sent.push(op),
    sendCancel: (operationId, reason) => cancels.push({ operationId, reason }),
  };
  const registered = await accounts.register({ id: session.id, agentId: session.agentId }, account('dev'));
  expect(registered.accepted).toBe(true);
  const dispatcher = new OperationDispatcher({
    accounts,
    session: (id) => (id === session.id ? session : undefined),
    log,
    options: { agentWaitMs: 0, operationTimeoutMs },
  });
  return { dispatcher, sent, cancels, accounts };
}

function patch(strategy: PatchStrategy) {
  return { operationId: `op-${strategy}`, ...patchOperation(strategy) };
}

describe('an operation whose agent went away after it was sent', () => {
  it('a JSON patch or a merge patch fails as retryable and is not sent a second time', async () => {
    for (const strategy of ['json', 'merge'] as const) {
      const { dispatcher, sent } = await setUp();
      const outcome = dispatcher.execute(patch(strategy));
      await expect.poll(() => sent.length).toBe(1);
      dispatcher.onSessionClosed('s1');
      const o = await outcome;
      expect(o, strategy).toMatchObject({ kind: 'failed', retryable: true });
      expect(o.kind === 'failed' && o.message, strategy).toMatch(/disconnected while running patchManifest/);
      expect(sent).toHaveLength(1);
      // A first delivery names no earlier session.
      expect(sent[0]?.sentBeforeOnSessions).toEqual([]);
    }
  });

  it('one the agent never answers fails as retryable too', async () => {
    const { dispatcher, sent } = await setUp(200);
    const o = await dispatcher.execute(patch('json'));
    expect(sent).toHaveLength(1);
    expect(o).toMatchObject({ kind: 'failed', retryable: true });
    expect(o.kind === 'failed' && o.message).toMatch(/did not answer patchManifest/);
  });

  it('sent again by a resume, it carries the sessions of the unanswered attempts to the agent', async () => {
    const { dispatcher, sent } = await setUp(200);
    await dispatcher.execute({ ...patch('json'), sentBeforeOnSessions: ['s-old', 'replica:b'] });
    expect(sent[0]?.sentBeforeOnSessions).toEqual(['s-old', 'replica:b']);
  });
});

describe('an operation whose task is cancelled (DispatchRequest.signal)', () => {
  it("sent: a Cancel follows it down the same stream, and the agent's answer is the outcome", async () => {
    const { dispatcher, sent, cancels } = await setUp();
    const abort = new AbortController();
    const outcome = dispatcher.execute({ ...patch('json'), signal: abort.signal });
    await expect.poll(() => sent.length).toBe(1);
    abort.abort('cancelled by alice');
    expect(cancels).toEqual([{ operationId: 'op-json', reason: 'cancelled by alice' }]);
    const answer = {
      operationId: 'op-json',
      ok: false,
      error: 'cancelled',
      resultJson: Buffer.alloc(0),
      resourceVersions: {},
    };
    dispatcher.onResult('s1', answer);
    expect(await outcome).toMatchObject({ kind: 'result', result: { ok: false, error: 'cancelled' } });
  });

  it('waiting for an agent to hold its account: it stops waiting and is never sent', async () => {
    const { dispatcher, sent, cancels } = await setUp();
    const abort = new AbortController();
    const outcome = dispatcher.execute({
      ...patch('json'),
      account: 'nobody-holds-it',
      agentWaitMs: 600_000,
      signal: abort.signal,
    });
    abort.abort('cancelled by alice');
    const o = await outcome;
    expect(o).toMatchObject({ kind: 'failed', retryable: false, cancelled: true });
    expect(o.kind === 'failed' && o.message).toMatch(/cancelled before it was sent: cancelled by alice/);
    expect({ sent: sent.length, cancels: cancels.length }).toEqual({ sent: 0, cancels: 0 });
  });
});
