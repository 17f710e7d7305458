import type { NormalizedOperation } from '../../shared/ops/types.js';

/**
 * A task as Clouddriver reports it (`GET /task/{id}`, docs/clouddriver-compatibility.md, Tasks): status flags mirroring the
 * last history line, the history itself and the operations' result objects. We keep one record per operation next
 * to it (which agent ran it, when, how long) for the admin API; `GET /task` leaves those out.
 */
export interface TaskStatus {
  phase: string;
  status: string;
  complete: boolean;
  completed: boolean;
  failed: boolean;
  retryable: boolean;
}

export interface HistoryEntry {
  phase: string;
  status: string;
}

export type OperationState = 'queued' | 'waiting-for-agent' | 'sent' | 'waiting-for-cache' | 'succeeded' | 'failed';

/** One operation of a task as routed to an agent (`GET /armory/agent/operations/{id}`). */
export interface OperationRecord {
  operationId: string;
  taskId: string;
  index: number;
  type: string;
  account: string;
  state: OperationState;
  /** How many times it was sent (an idempotent operation is sent again after its agent dropped). */
  attempts: number;
  agentId?: string;
  sessionId?: string;
  queuedAt: number;
  sentAt?: number;
  resultAt?: number;
  finishedAt?: number;
  durationMs?: number;
  ok?: boolean;
  error?: string;
  errorCode?: string;
  retryable?: boolean;
  /** The agent answered with a failure (so that attempt did not apply: the agent says so when it cannot tell). */
  agentFailed?: boolean;
  /**
   * Sessions on which earlier attempts of this operation id (before a resume) were sent and may have run without
   * their outcome coming back: sent to the agent as `Operation.sent_before_on_sessions`.
   */
  sentBeforeOnSessions?: string[];
  /** `<apiVersion>/<kind>/<namespace>/<name>` → resourceVersion the agent wrote ('' = deleted). */
  resourceVersions?: Record<string, string>;
}

export interface Task {
  id: string;
  requestId?: string;
  ownerId: string;
  startTimeMs: number;
  updatedAtMs: number;
  status: TaskStatus;
  history: HistoryEntry[];
  resultObjects: unknown[];
  outputs: unknown[];
  sagaIds: string[];
  retryable: boolean;
  operations: OperationRecord[];
  /**
   * The operations as parsed, so a failed, retryable task can run them again under its id (`POST /task/{id}:resume`).
   * Absent on tasks stored before it was recorded; never shown in the Clouddriver view.
   */
  submitted?: NormalizedOperation[];
}

export const ORCHESTRATION = 'ORCHESTRATION';

export function newTask(id: string, ownerId: string, requestId: string | undefined, now = Date.now()): Task {
  const first = { phase: ORCHESTRATION, status: 'Initializing Orchestration Task' };
  return {
    id,
    ...(requestId ? { requestId } : {}),
    ownerId,
    startTimeMs: now,
    updatedAtMs: now,
    status: { ...first, complete: false, completed: false, failed: false, retryable: false },
    history: [first],
    resultObjects: [],
    outputs: [],
    sagaIds: [],
    retryable: false,
    operations: [],
  };
}

export function addHistory(task: Task, phase: string, status: string): void {
  task.history.push({ phase, status });
  task.status = { ...task.status, phase, status };
  task.updatedAtMs = Date.now();
}

export function completeTask(task: Task): void {
  // Clouddriver appends "Orchestration completed." twice (once per op loop end, once in complete()).
  addHistory(task, ORCHESTRATION, 'Orchestration completed.');
  addHistory(task, ORCHESTRATION, 'Orchestration completed.');
  task.status = { ...task.status, complete: true, completed: true, failed: false, retryable: false };
}

export function failTask(task: Task, line: string, retryable: boolean): void {
  addHistory(task, ORCHESTRATION, line);
  task.status = { ...task.status, complete: true, completed: true, failed: true, retryable };
  task.retryable = retryable;
}

/** The Clouddriver view: everything but our per-operation records. */
export function taskView(task: Task): Omit<Task, 'operations' | 'updatedAtMs' | 'submitted'> {
  const { operations: _operations, updatedAtMs: _updated, submitted: _submitted, ...rest } = task;
  return rest;
}

/** Back to running (resume, restart): not complete, not failed, with a history line saying why. */
export function reopenTask(task: Task, line: string): void {
  addHistory(task, ORCHESTRATION, line);
  task.status = { ...task.status, complete: false, completed: false, failed: false, retryable: false };
  task.retryable = false;
}
