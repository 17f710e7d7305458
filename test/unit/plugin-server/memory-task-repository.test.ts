import { MemoryTaskRepository } from '../../../src/plugin-server/tasks/index.js';
import { taskRepositoryContract } from './task-repository-contract.js';

taskRepositoryContract('memory', {
  create: async () => new MemoryTaskRepository(),
  destroy: async (repo) => repo.close(),
});
