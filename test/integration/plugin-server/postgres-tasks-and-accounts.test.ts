import pg from 'pg';
import { afterAll, beforeAll, describe, it } from 'vitest';
import { PostgresDynamicAccountStore } from '../../../src/plugin-server/accounts/postgres-dynamic-store.js';
import { PostgresTaskRepository, type TaskRepository } from '../../../src/plugin-server/tasks/index.js';
import { createPostgresDatabase, onPostgresDatabases, testPostgres } from '../../infra/postgres.js';
import { dynamicStoreContract } from '../../unit/plugin-server/dynamic-store-contract.js';
import {
  expectAbandonedJudgedAtStoreClock,
  taskRepositoryContract,
} from '../../unit/plugin-server/task-repository-contract.js';

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
      await expectAbandonedJudgedAtStoreClock(repo, (id, ms) =>
        c.query('UPDATE sa_tasks SET alive_at = alive_at - $1 WHERE id = $2', [ms, id]),
      );
    } finally {
      await c.end().catch(() => undefined);
      await repo.close();
      await db.drop();
    }
  });
});
