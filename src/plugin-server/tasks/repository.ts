import type { Task } from './model.js';

/**
 * Where tasks live: in memory (the embedded default) or MySQL (survives restarts, shared by replicas). Both pass one
 * contract suite (test/unit/plugin-server/task-repository-contract.ts).
 */
export interface TaskRepository {
  readonly type: 'memory' | 'mysql';
  init(): Promise<void>;
  /**
   * Stores a new task. When the task carries a requestId already used by another task, nothing is stored and that
   * task is returned instead (`created: false`) — unless `replaces` names that task (a failed, retryable task being
   * run again), in which case the request id moves to the new task.
   */
  create(task: Task, options?: { replaces?: string }): Promise<{ task: Task; created: boolean }>;
  /** Overwrites a stored task (the runner saves after every change). */
  save(task: Task): Promise<void>;
  get(id: string): Promise<Task | undefined>;
  getByRequestId(requestId: string): Promise<Task | undefined>;
  /** Newest first. */
  list(options: { limit: number; incompleteOnly?: boolean }): Promise<Task[]>;
  close(): Promise<void>;
}
