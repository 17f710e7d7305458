import { MysqlTaskRepository, type TaskRepository } from '../../../src/plugin-server/tasks/index.js';
import { createTestDatabase } from '../../infra/index.js';
import { taskRepositoryContract } from '../../unit/plugin-server/task-repository-contract.js';

// The same contract as the memory repository, against the real MariaDB of the test run (one database per test).
const drops = new WeakMap<TaskRepository, () => Promise<void>>();

taskRepositoryContract('mysql', {
  create: async () => {
    const db = await createTestDatabase('sa_tasks');
    const repo = new MysqlTaskRepository(db.url);
    drops.set(repo, db.drop);
    return repo;
  },
  destroy: async (repo) => {
    await repo.close();
    await drops.get(repo)?.();
  },
});
