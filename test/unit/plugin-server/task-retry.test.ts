/**
 * Orca's forced retry of a task (MonitorDeployManifestTask: `PATCH /kubernetes/task/{id}` with `{"retry": true}`,
 * then `POST /kubernetes/task/{id}/restart`) against the task runner: the PATCH fails the task as Clouddriver's
 * `task.fail(retry)` does, never while the task runs (its replica is alive), and restart takes only a failed,
 * retryable task. Two runners share one (memory) task repository, as two replicas share MySQL; no agent is
 * connected, so an operation waits for one (running) or fails at once (retryable).
 */
import { describe, expect, it } from 'vitest';
import { CacheBarrier, OperationDispatcher, TaskRunner } from '../../../src/plugin-server/ops/index.js';
import { parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import { eventually, memoryTaskDeps } from './helpers.js';

describe('forced retry: PATCH {"retry": ...} and restart', () => {
  it('fails a finished task as asked, refuses a running one, and restarts only a failed, retryable task', async () => {
    const { log, store, accounts, repo } = await memoryTaskDeps();
    const runner = (agentWaitMs: number) =>
      new TaskRunner({
        repo,
        dispatcher: new OperationDispatcher({
          accounts,
          session: () => undefined,
          log,
          options: { agentWaitMs, operationTimeoutMs: 5_000 },
        }),
        barrier: new CacheBarrier(store, accounts),
        log,
        options: { cacheWaitMs: 1_000 },
      });
    const waiting = runner(600_000);
    const failing = runner(0);
    const parsed = parseOperations(
      [{ deleteManifest: { account: 'nobody', location: 'default', manifestName: 'configMap gone' } }],
      { endpoint: 'kubernetes' },
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));

    // Running (waiting for an agent): its replica is alive, so neither replica fails it.
    const { task: running } = await waiting.submit(parsed.operations);
    for (const r of [waiting, failing]) {
      await expect(r.failAsRequested(running.id, true)).rejects.toMatchObject({
        code: 'SA_ERR_CONFLICT',
        message: expect.stringMatching(/is still running on plugin-server .*, which is alive; it is not failed/),
      });
      await expect(r.restart(running.id, parsed.operations)).rejects.toMatchObject({ code: 'SA_ERR_CONFLICT' });
    }
    expect((await failing.get(running.id))?.status).toMatchObject({ completed: false, failed: false });

    // Failed as retryable (no agent): Orca's {"retry": false} takes retryability away; restart is then refused.
    const { task } = await failing.submit(parsed.operations);
    await eventually(
      () => failing.get(task.id),
      (t) => t?.status.completed === true,
    );
    expect((await failing.get(task.id))?.status).toMatchObject({ failed: true, retryable: true });
    const notRetryable = await waiting.failAsRequested(task.id, false);
    expect(notRetryable?.status).toMatchObject({ completed: true, failed: true, retryable: false });
    expect(notRetryable?.history.at(-1)?.status).toBe('Orchestration failed: marked failed on request (retry: false)');
    await expect(failing.restart(task.id, parsed.operations)).rejects.toMatchObject({
      code: 'SA_ERR_CONFLICT',
      message: expect.stringMatching(
        /cannot be restarted: only a failed, retryable task can \(it has failed, not retryable\)/,
      ),
    });
    // {"retry": true}, as Orca sends it: restart runs the operations again under the same id.
    expect((await waiting.failAsRequested(task.id, true))?.status).toMatchObject({ failed: true, retryable: true });
    const restarted = await failing.restart(task.id, parsed.operations);
    expect(restarted?.id).toBe(task.id);
    expect(restarted?.history.map((h) => h.status)).toContain('Restarting task with 1 operation(s)');
    expect(await waiting.failAsRequested('no-such-task', true)).toBeUndefined();
  });
});
