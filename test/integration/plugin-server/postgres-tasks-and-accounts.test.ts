import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresDynamicAccountStore } from '../../../src/plugin-server/accounts/postgres-dynamic-store.js';
import {
  failTask,
  newTask,
  PostgresTaskRepository,
  type TaskRepository,
} from '../../../src/plugin-server/tasks/index.js';
import { createPostgresDatabase, onPostgresDatabases, testPostgres } from '../../infra/postgres.js';
import { dynamicStoreContract } from '../../unit/plugin-server/dynamic-store-contract.js';
import { taskRepositoryContract } from '../../unit/plugin-server/task-repository-contract.js';

// The task repository's and the dynamic accounts' contracts, exactly as memory and MySQL pass them, against a real
// PostgreSQL server of this file (one database per test).
let server: { url: string; stop(): Promise<void> };
beforeAll(async () => {
  server = await testPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

taskRepositoryContract(
  'postgres',
  onPostgresDatabases<TaskRepository>(
    () => server.url,
    'sa_tasks',
    (url) => new PostgresTaskRepository(url),
  ),
);

dynamicStoreContract(
  'postgres',
  onPostgresDatabases(
    () => server.url,
    'sa_dyn',
    (url) => new PostgresDynamicAccountStore(url),
  ),
);

describe('tasks of a replica that stopped (postgres)', () => {
  it('are found once their owner stops marking them, and failed only while it stays silent', async () => {
    const db = await createPostgresDatabase(server.url, 'sa_tasks_reap');
    const repo = new PostgresTaskRepository(db.url);
    const c = new pg.Client({ connectionString: db.url });
    try {
      await repo.init();
      await c.connect();
      // Time passing for a task's owner, at the database's clock (which no process here can step): its mark aged.
      const silence = (id: string, ms: number) =>
        c.query('UPDATE sa_tasks SET alive_at = alive_at - $1 WHERE id = $2', [ms, id]);
      // Stamped by the replicas' wall clocks, an hour off: nothing is judged by them.
      const skewed = Date.now() + 3_600_000;
      await repo.create(newTask('dead-1', 'dead@a', undefined, skewed));
      await repo.create(newTask('live-1', 'live@b', undefined, skewed - 7_200_000));
      await silence('dead-1', 60_000);
      await silence('live-1', 60_000);
      await repo.heartbeat('live@b');
      const abandoned = await repo.abandoned(10_000);
      expect(abandoned.map((t) => t.id)).toEqual(['dead-1']);
      const dead = abandoned[0]!;
      failTask(dead, 'Orchestration failed: replica stopped', true);
      // The owner comes back to life before the reaper writes: the write is refused.
      await repo.heartbeat('dead@a');
      expect(await repo.saveIfAbandoned(dead, 10_000)).toBe(false);
      expect((await repo.get('dead-1'))?.status.completed).toBe(false);
      // Silent again past the bound: failed once, and a second reaper finds nothing.
      await silence('dead-1', 20_000);
      expect(await repo.saveIfAbandoned(dead, 10_000)).toBe(true);
      expect(await repo.get('dead-1')).toMatchObject({ status: { completed: true, failed: true, retryable: true } });
      expect(await repo.saveIfAbandoned(dead, 10_000)).toBe(false);
    } finally {
      await c.end().catch(() => undefined);
      await repo.close();
      await db.drop();
    }
  });
});
