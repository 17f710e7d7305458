import type { Task } from './model.js';

/**
 * Where tasks live: in memory (the embedded default) or MySQL (survives restarts, shared by replicas). Both pass one
 * contract suite (test/unit/plugin-server/task-repository-contract.ts).
 */
export interface TaskRepository {
  readonly type: 'memory' | 'mysql' | 'postgres';
  init(): Promise<void>;
  /**
   * Stores a new task. When the task carries a requestId already used by another task, nothing is stored and that
   * task is returned instead (`created: false`) — unless `replaces` names that task (a failed, retryable task being
   * run again), in which case the request id moves to the new task.
   */
  create(task: Task, options?: { replaces?: string }): Promise<{ task: Task; created: boolean }>;
  /**
   * Overwrites a stored task (the runner saves after every change), only while it is still running and still
   * `task.ownerId`'s: false, nothing written, once a peer has failed it (reaped: its owner looked dead) or taken it
   * over (resume, restart), so a reaped task never flips to succeeded under its reaper.
   */
  save(task: Task): Promise<boolean>;
  get(id: string): Promise<Task | undefined>;
  getByRequestId(requestId: string): Promise<Task | undefined>;
  /** Newest first. */
  list(options: { limit: number; incompleteOnly?: boolean }): Promise<Task[]>;
  /**
   * The owner is alive: marks its incomplete tasks as running somewhere (replicas reap tasks nobody marks), at the
   * store's clock, as every write of a task does.
   */
  heartbeat(ownerId: string): Promise<void>;
  /**
   * Incomplete tasks nobody has marked or written for `staleMs` of the store's clock (their owner died, or lost the
   * database): judged at one clock, so a replica's skewed wall clock neither reaps a live peer's tasks nor has its own
   * reaped.
   */
  abandoned(staleMs: number): Promise<Task[]>;
  /** Saves a task failed by a reaper, only if it still has not been marked or written for `staleMs`. */
  saveIfAbandoned(task: Task, staleMs: number): Promise<boolean>;
  /**
   * Saves a task being run again (resume, restart) only if nobody wrote it since it was read (`updatedAtMs` as read
   * is still stored): of two replicas taking one task over at once, exactly one wins.
   */
  saveIfUnchanged(task: Task, readUpdatedAtMs: number): Promise<boolean>;
  /** Removes completed tasks finished before `olderThan`, and beyond the newest `keep`; returns how many. */
  purge(options: { olderThan: number; keep: number }): Promise<number>;
  close(): Promise<void>;
}
