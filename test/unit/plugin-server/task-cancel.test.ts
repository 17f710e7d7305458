/**
 * Cancelling a task (TaskRunner.cancel, `POST /scale-agent/tasks/{id}/cancel`) against the task runner and a real
 * dispatcher and registry on the memory store. The session below stands in for an agent's stream: it records the
 * operations and Cancels sent on it, and the test answers for the agent.
 */
import { describe, expect, it } from 'vitest';
import { parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import {
  CacheBarrier,
  OperationDispatcher,
  TaskRunner,
  type OperationSession,
} from '../../../src/plugin-server/ops/index.js';
import type { Operation } from '../../../src/shared/proto.js';
import { account, eventually, memoryTaskDeps } from './helpers.js';

async function setUp() {
  const { log, store, accounts, repo } = await memoryTaskDeps();
  const sent: Operation[] = [];
  const cancels: string[] = [];
  const session: OperationSession = {
    id: 's1',
    agentId: 'agent-1',
    open: true,
    sendOperation: (op) => sent.push(op),
    sendCancel: (operationId) => cancels.push(operationId),
  };
  expect((await accounts.register({ id: session.id, agentId: session.agentId }, account('dev'))).accepted).toBe(true);
  const dispatcher = new OperationDispatcher({
    accounts,
    session: (id) => (id === session.id ? session : undefined),
    log,
    options: { agentWaitMs: 0, operationTimeoutMs: 60_000 },
  });
  const runner = () =>
    new TaskRunner({
      repo,
      dispatcher,
      barrier: new CacheBarrier(store, accounts),
      log,
      options: { cacheWaitMs: 1000 },
    });
  return { dispatcher, runner, sent, cancels };
}

/** The agent's answer on stream s1: the operation ran to its end and succeeded. */
function ranToItsEnd(dispatcher: OperationDispatcher, operationId: string): void {
  dispatcher.onResult('s1', { operationId, ok: true, error: '', resultJson: Buffer.alloc(0), resourceVersions: {} });
}

const parsed = parseOperations(
  [
    { deleteManifest: { account: 'dev', location: 'default', manifestName: 'configMap first' } },
    { deleteManifest: { account: 'dev', location: 'default', manifestName: 'configMap second' } },
  ],
  { endpoint: 'kubernetes' },
);
if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
const operations = parsed.operations;

describe('cancelling a task', () => {
  it('the operation at the agent gets a Cancel; it ran to its end, and the next one is never sent', async () => {
    const { dispatcher, runner, sent, cancels } = await setUp();
    const r = runner();
    const { task } = await r.submit(operations, undefined, 'alice');
    await eventually(
      async () => sent.length,
      (n) => n === 1,
    );
    expect(await r.cancel(task.id, 'alice')).toMatchObject({ cancelling: true });
    expect(cancels).toEqual([`${task.id}.0`]);
    // The agent had sent its DELETE: it answers as the operation ended.
    ranToItsEnd(dispatcher, `${task.id}.0`);
    const done = (await eventually(
      () => r.get(task.id),
      (t) => t?.status.completed === true,
    ))!;
    expect(sent).toHaveLength(1);
    expect(done.status).toMatchObject({ failed: true, retryable: false });
    expect(done.history.map((h) => h.status)).toContain('Cancel requested by alice');
    expect(done.history.at(-1)?.status).toBe(
      'Orchestration failed: KubernetesDeleteManifestOperation | ScaleAgentError: [cancelled by alice before ' +
        'operation 2 of 2 (deleteManifest) started; the operations before it ran to their end]',
    );
    expect(done.operations.map((o) => o.state)).toEqual(['succeeded', 'failed']);
    // Cancelling it again: it has finished, answered as it is.
    expect(await r.cancel(task.id, 'alice')).toMatchObject({ cancelling: false, task: { status: done.status } });
  });

  // The agent's result and the cancel cross: both handled in one tick, in either order. The operation ran to its end,
  // so a one-operation task ends as it did; a two-operation task never sends its second and fails as cancelled.
  for (const order of ['cancel, then result', 'result, then cancel'] as const) {
    for (const count of [1, 2]) {
      it(`${order} in the same instant, ${count} operation(s): the task ends once, as the agent's answer says`, async () => {
        const { dispatcher, runner, sent } = await setUp();
        const r = runner();
        const { task } = await r.submit(operations.slice(0, count), undefined, 'alice');
        await eventually(
          async () => sent.length,
          (n) => n === 1,
        );
        const result = () => ranToItsEnd(dispatcher, `${task.id}.0`);
        let cancelled: Promise<unknown>;
        if (order === 'cancel, then result') {
          cancelled = r.cancel(task.id, 'alice');
          result();
        } else {
          result();
          cancelled = r.cancel(task.id, 'alice');
        }
        await cancelled;
        const done = (await eventually(
          () => r.get(task.id),
          (t) => t?.status.completed === true,
        ))!;
        expect(sent).toHaveLength(1);
        if (count === 1) {
          expect(done.status).toMatchObject({ completed: true, failed: false });
          expect(done.operations.map((o) => o.state)).toEqual(['succeeded']);
        } else {
          expect(done.status).toMatchObject({ completed: true, failed: true, retryable: false });
          expect(done.operations.map((o) => o.state)).toEqual(['succeeded', 'failed']);
        }
        // Settled: a later look finds it as it ended (no second ending).
        await new Promise((res) => setTimeout(res, 50));
        expect((await r.get(task.id))?.status).toEqual(done.status);
        expect((await r.get(task.id))?.history).toEqual(done.history);
      });
    }
  }

  it('a task running on a replica that published no address is a 409 naming its host; an unknown one is undefined', async () => {
    const { runner, sent } = await setUp();
    const [here, other] = [runner(), runner()];
    const { task } = await other.submit(operations);
    await eventually(
      async () => sent.length,
      (n) => n === 1,
    );
    await expect(here.cancel(task.id, 'alice')).rejects.toMatchObject({
      code: 'SA_ERR_CONFLICT',
      message: expect.stringMatching(/^Task .* runs on plugin-server .*, which published no address for cancels/),
    });
    expect(await here.cancel('no-such-task', 'alice')).toBeUndefined();
  });
});
