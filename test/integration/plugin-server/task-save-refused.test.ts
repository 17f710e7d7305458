/**
 * A task whose writes the store refuses (here: a MariaDB user without UPDATE on sa_tasks; in the fault suite, a full
 * disk) must not be left "running" in the store for ever: the runner makes the write again until it lands, and
 * answers the task from memory meanwhile. Real MariaDB, real task runner; the operation fails at once (no agent
 * holds its account), so the refused write is the task's last one, the one carrying its outcome.
 */
import { createConnection } from 'mysql2/promise';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { CacheBarrier, OperationDispatcher, TaskRunner } from '../../../src/plugin-server/ops/index.js';
import { MysqlTaskRepository } from '../../../src/plugin-server/tasks/index.js';
import { parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import { createTestDatabase } from '../../infra/index.js';
import { waitFor } from '../../infra/wait.js';

describe('task writes the store refuses (mysql)', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('are made again until they land; the task is answered from memory meanwhile', async () => {
    const db = await createTestDatabase('sa_tasks_refused');
    cleanups.push(db.drop);
    const admin = await createConnection(db.url);
    cleanups.push(() => admin.end());
    const owner = new MysqlTaskRepository(db.url);
    cleanups.push(() => owner.close());
    await owner.init();

    // A user that may add tasks but not change them: every save after the create is refused.
    const user = `sa_noupd_${Math.random().toString(36).slice(2, 8)}`;
    await admin.query(`CREATE USER '${user}'@'%'`);
    cleanups.push(() => admin.query(`DROP USER '${user}'@'%'`));
    await admin.query(`GRANT SELECT, INSERT ON \`${db.database}\`.* TO '${user}'@'%'`);
    const url = new URL(db.url);
    url.username = user;
    const repo = new MysqlTaskRepository(url.toString());
    cleanups.push(() => repo.close());

    const log = pino({ level: process.env.DEBUG_TEST ? 'debug' : 'silent' });
    const store = new MemoryCacheStore();
    await store.init();
    const accounts = new AccountRegistry(store, log, { gracePeriodMs: 60_000 });
    const dispatcher = new OperationDispatcher({
      accounts,
      session: () => undefined,
      log,
      options: { agentWaitMs: 0, operationTimeoutMs: 5_000 },
    });
    const runner = new TaskRunner({
      repo,
      dispatcher,
      barrier: new CacheBarrier(store, accounts),
      log,
      options: { cacheWaitMs: 1_000 },
    });
    const parsed = parseOperations(
      [{ deleteManifest: { account: 'nobody', location: 'default', manifestName: 'configMap gone' } }],
      { endpoint: 'kubernetes' },
    );
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const { task } = await runner.submit(parsed.operations, 'refused-1');

    // The operation failed (no agent for the account); the store still holds the task as created.
    const live = await waitFor('the task to fail', async () => {
      const t = await runner.get(task.id);
      return t?.status.completed ? t : undefined;
    });
    expect(live.status).toMatchObject({ completed: true, failed: true });
    expect((await owner.get(task.id))?.status.completed).toBe(false);

    // Table-level: MariaDB applies it to open connections at once (a database-level grant waits for their next USE).
    await admin.query(`GRANT UPDATE ON \`${db.database}\`.sa_tasks TO '${user}'@'%'`);
    await runner.flush();
    expect((await owner.get(task.id))?.status).toMatchObject({ completed: true, failed: true });
  });
});
