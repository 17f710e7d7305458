import { createConnection } from 'mysql2/promise';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { CacheBarrier, OperationDispatcher, TaskRunner } from '../../../src/plugin-server/ops/index.js';
import { StorageFullSignal } from '../../../src/plugin-server/storage-full.js';
import { MysqlTaskRepository, newTask, type TaskRepository } from '../../../src/plugin-server/tasks/index.js';
import { createTestDatabase, onTestDatabases } from '../../infra/index.js';
import { patchOperation } from '../../infra/records.js';
import {
  expectAbandonedJudgedAtStoreClock,
  taskRepositoryContract,
} from '../../unit/plugin-server/task-repository-contract.js';

// The same contract as the memory repository, against the real MariaDB of the test run (one database per test).
taskRepositoryContract(
  'mysql',
  onTestDatabases<TaskRepository>('sa_tasks', (url) => new MysqlTaskRepository(url)),
);

describe('tasks of a replica that stopped (mysql)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });
  /** A task repository on a database of its own, and a plain connection to the same database; all dropped after. */
  const tasksDatabase = async (name: string) => {
    const db = await createTestDatabase(name);
    cleanups.push(db.drop);
    const repo = new MysqlTaskRepository(db.url);
    cleanups.push(() => repo.close());
    await repo.init();
    const c = await createConnection(db.url);
    cleanups.push(() => c.end());
    return { repo, c };
  };

  it('are found once their owner stops marking them, and failed only while it stays silent', async () => {
    const { repo, c } = await tasksDatabase('sa_tasks_reap');
    await expectAbandonedJudgedAtStoreClock(repo, (id, ms) =>
      c.query('UPDATE sa_tasks SET alive_at = alive_at - ? WHERE id = ?', [ms, id]),
    );
  });

  it('reaps a task as retryable, and its resume tells the agent on which session the unanswered attempt went', async () => {
    const { repo, c } = await tasksDatabase('sa_tasks_reap_patch');
    const log = pino({ level: 'silent' });
    const store = new MemoryCacheStore();
    await store.init();
    const accounts = new AccountRegistry(store, log, { gracePeriodMs: 60_000 });
    const reaper = new TaskRunner({
      repo,
      dispatcher: new OperationDispatcher({
        accounts,
        session: () => undefined,
        log,
        options: { agentWaitMs: 0, operationTimeoutMs: 5_000 },
      }),
      barrier: new CacheBarrier(store, accounts),
      log,
      options: { cacheWaitMs: 1_000 },
    });
    // Tasks of a replica that died while each waited for its agent's answer (sent on session s-dead) or for an agent
    // (not sent). Whatever the operation, the task is retryable: the agent decides at the resume whether a repeat
    // is safe (a JSON patch without its mark is refused there), given where the earlier attempt went.
    const cases = [
      ['json-sent', 'json', 'sent', ['s-dead']],
      ['json-waiting-for-cache', 'json', 'waiting-for-cache', ['s-dead']],
      ['json-not-sent', 'json', 'waiting-for-agent', undefined],
      ['merge-sent', 'merge', 'sent', ['s-dead']],
    ] as const;
    for (const [id, strategy, state] of cases) {
      const t = newTask(id, 'dead@a', undefined);
      t.submitted = [patchOperation(strategy)];
      t.operations = [
        {
          operationId: `${id}.0`,
          taskId: id,
          index: 0,
          type: 'patchManifest',
          account: 'dev',
          state,
          attempts: 1,
          queuedAt: 0,
          ...(state === 'waiting-for-agent' ? {} : { sentAt: 1, sessionId: 's-dead', agentId: 'agent-1' }),
        },
      ];
      await repo.create(t);
      await c.query('UPDATE sa_tasks SET alive_at = alive_at - ? WHERE id = ?', [60_000, id]);
    }
    expect(await reaper.reap(10_000)).toBe(cases.length);
    for (const [id, , , sessions] of cases) {
      const t = await repo.get(id);
      expect(t?.status, id).toMatchObject({ completed: true, failed: true, retryable: true });
      expect(t?.history.at(-1)?.status, id).toBe(
        'Orchestration failed: the plugin-server replica running the task stopped',
      );
      // Orca's resume: no agent holds the account here, so it fails again at once, with what it would have sent.
      await reaper.resume(id);
      const resumed = await waitForTask(repo, id);
      expect(resumed.operations[0]?.sentBeforeOnSessions, id).toEqual(sessions);
    }
  });

  it('judges a task written by a replica of the previous version (no alive_at) by its updated_at', async () => {
    const { repo, c } = await tasksDatabase('sa_tasks_upgrade');
    for (const [id, age] of [
      ['old-live', 1_000],
      ['old-dead', 60_000],
    ] as const) {
      const t = newTask(id, 'older@a', undefined);
      // As the previous version inserts: no alive_at.
      await c.query(
        'INSERT INTO sa_tasks (id, request_id, owner_id, completed, started_at, updated_at, body) VALUES (?, NULL, ?, 0, ?, ?, ?)',
        [id, t.ownerId, t.startTimeMs, Date.now() - age, JSON.stringify(t)],
      );
    }
    expect((await repo.abandoned(10_000)).map((t) => t.id)).toEqual(['old-dead']);
  });
});

describe('a task write the database refuses for lack of space (mysql)', () => {
  it('fails the write and is noted for readiness, with MariaDB’s reason', async () => {
    const db = await createTestDatabase('sa_tasks_full');
    const storageFull = new StorageFullSignal();
    const repo = new MysqlTaskRepository(db.url, { storageFull });
    try {
      await repo.init();
      // The smallest MyISAM table holds 64 KiB and then answers as a full disk makes InnoDB answer: "The table … is
      // full" (1114). Filling a real disk needs mount rights; `npm run faults -- --only disk-full` does that.
      const c = await createConnection(db.url);
      await c.query('ALTER TABLE sa_tasks ENGINE=MyISAM MAX_ROWS=1 AVG_ROW_LENGTH=1');
      await c.end();
      let refused: unknown;
      for (let i = 0; i < 2_000 && refused === undefined; i++) {
        await repo.create(newTask(`full-${i}`, 'me@a', `req-${i}`)).catch((e: unknown) => (refused = e));
      }
      expect(refused).toMatchObject({ errno: 1114 });
      expect(storageFull.reason()).toMatch(
        /^out of space: a write was refused \d+ s ago \(The table .*sa_tasks.* is full\)$/,
      );
    } finally {
      await repo.close();
      await db.drop();
    }
  });
});

/** The task once it has completed again (a resumed task runs in the background). */
async function waitForTask(repo: TaskRepository, id: string) {
  for (let i = 0; i < 200; i++) {
    const t = await repo.get(id);
    if (t?.status.completed) return t;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`task ${id} did not complete again`);
}
