export * from './model.js';
export type { TaskRepository } from './repository.js';
export { MemoryTaskRepository } from './memory.js';
export { MysqlTaskRepository } from './mysql.js';
export { PostgresTaskRepository } from './postgres.js';
