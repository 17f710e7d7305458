/**
 * The owner's heartbeat and a task's own writes run at the same time on every replica. In the fault suite one
 * task's last write (the one that marks it completed) was chosen as an InnoDB deadlock victim against the heartbeat:
 * the heartbeat found its rows through the (completed, started_at) index and then locked them, while the save held
 * the row and then had to move its entry in that same index — opposite orders. Real MariaDB; both run flat out
 * over a set of tasks for a bounded number of rounds, and no statement may come back as a deadlock.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { completeTask, MysqlTaskRepository, newTask, reopenTask } from '../../../src/plugin-server/tasks/index.js';
import { createTestDatabase } from '../../infra/index.js';

const TASKS = 40;
const ROUNDS = 300;

describe('task heartbeat beside task writes (mysql)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('never deadlocks with a write that completes or reopens a task', async () => {
    const db = await createTestDatabase('sa_tasks_deadlock');
    cleanups.push(db.drop);
    const repo = new MysqlTaskRepository(db.url);
    cleanups.push(() => repo.close());
    await repo.init();
    const owner = 'owner@a';
    const tasks = Array.from({ length: TASKS }, (_, i) => newTask(`t-${String(i).padStart(3, '0')}`, owner, undefined));
    for (const t of tasks) await repo.create(t);

    const deadlocks: string[] = [];
    const note = (e: unknown): void => {
      if ((e as { code?: string }).code === 'ER_LOCK_DEADLOCK') deadlocks.push((e as Error).message);
      else throw e;
    };
    let stop = false;
    const beats = (async () => {
      let n = 0;
      while (!stop) {
        await repo.heartbeat(owner).catch(note);
        n += 1;
      }
      return n;
    })();
    // Each round flips every task between completed and running, as finishing and resuming tasks do.
    for (let round = 0; round < ROUNDS; round++) {
      await Promise.all(
        tasks.map((t) => {
          if (!t.status.completed) {
            completeTask(t);
            return repo.save(t).catch(note);
          }
          // Reopened as a resume does: conditional on the version read.
          const read = t.updatedAtMs;
          reopenTask(t, 'again');
          t.updatedAtMs = Math.max(t.updatedAtMs, read + 1);
          return repo.saveIfUnchanged(t, read).catch(note);
        }),
      );
    }
    stop = true;
    expect(await beats).toBeGreaterThan(0);
    expect(deadlocks).toEqual([]);
  }, 300_000);
});
