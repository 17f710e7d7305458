import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { sleep } from '../../shared/clock.js';
import { ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import {
  exceptionResult,
  OPERATION_CLASSES,
  OPERATION_PHASES,
  type NormalizedOperation,
  type OperationType,
  type ResultBody,
} from '../../shared/ops/index.js';
import {
  addHistory,
  completeTask,
  failTask,
  newTask,
  ORCHESTRATION,
  reopenTask,
  type OperationRecord,
  type Task,
  type TaskRepository,
} from '../tasks/index.js';
import type { AuditLog } from '../audit.js';
import type { CacheBarrier } from './barrier.js';
import type { OperationDispatcher } from './dispatcher.js';
import type { OperationMetrics } from './metrics.js';

export interface TaskRunnerOptions {
  /** How long a finished operation waits for the cache to catch up with what it wrote. */
  cacheWaitMs: number;
}

/** The host part of an owner id (`<uuid>@<hostname>`): what `GET /kubernetes/task/{id}/owner` names. */
export function ownerHost(ownerId: string): string {
  return ownerId.slice(ownerId.indexOf('@') + 1);
}

/** Operations whose task Orca waits on for a result object (docs/clouddriver-compatibility.md, Tasks). */
const RESULT_EXPECTED = new Set<OperationType>(['deployManifest', 'deleteManifest', 'patchManifest']);

/** A refused task write is made again after 200 ms, doubling up to 5 s. */
const SAVE_RETRY_BASE_MS = 200;
const SAVE_RETRY_MAX_MS = 5_000;

/**
 * Runs tasks: each operation in order goes to its account's agent, then waits for the cache to hold what it wrote,
 * then the next one; the first failure ends the task. Every step is written to the task repository, so a poller on
 * any replica (and after a restart, with MySQL) sees it.
 */
export class TaskRunner {
  readonly ownerId = `${randomUUID()}@${hostname()}`;
  private readonly running = new Map<string, Task>();
  private readonly saving = new Map<string, Promise<void>>();
  /** Who asked for each running task, for its operations' audit lines. */
  private readonly requesters = new Map<string, string>();
  /** Aborted when a running task is cancelled (cancel()), with the reason as the abort's reason. */
  private readonly cancels = new Map<string, AbortController>();
  private stopped = false;

  constructor(
    private readonly deps: {
      repo: TaskRepository;
      dispatcher: OperationDispatcher;
      barrier: CacheBarrier;
      log: Logger;
      options: TaskRunnerOptions;
      metrics?: OperationMetrics;
      audit?: AuditLog;
      /**
       * Passes a cancel to the live replica whose runner is `ownerId` (ops/peer-forward.ts cancelTaskAtPeer);
       * undefined when no live replica published that owner.
       */
      cancelAtOwner?(ownerId: string, id: string, requestedBy: string): Promise<{ cancelling: boolean }> | undefined;
    },
  ) {}

  /**
   * Marks this runner's tasks as alive (every few seconds), so no replica reaps them; see reap().
   */
  heartbeat(): Promise<void> {
    return this.deps.repo.heartbeat(this.ownerId);
  }

  /**
   * Tasks whose owner stopped marking them (the replica was killed, or lost the database) cannot finish: any
   * replica fails them as retryable, once, so pollers stop waiting and Orca may run them again. Never a task whose
   * owner is alive: the failure is written only if the owner is still silent. Silence is measured at the store's
   * clock (TaskRepository.abandoned), never at this replica's.
   */
  async reap(staleMs: number): Promise<number> {
    let n = 0;
    for (const t of await this.deps.repo.abandoned(staleMs)) {
      if (this.running.has(t.id)) continue;
      failTask(t, 'Orchestration failed: the plugin-server replica running the task stopped', true);
      if (await this.deps.repo.saveIfAbandoned(t, staleMs)) n += 1;
    }
    return n;
  }

  /**
   * Creates the task and starts it, unless `requestId` names an existing task that is not a failed, retryable one:
   * then that task is returned and nothing runs.
   */
  async submit(
    operations: NormalizedOperation[],
    requestId?: string,
    requestedBy = 'unknown',
  ): Promise<{ task: Task; created: boolean }> {
    let replaces: string | undefined;
    if (requestId) {
      const existing = await this.deps.repo.getByRequestId(requestId);
      if (existing && !(existing.status.failed && existing.status.retryable)) return { task: existing, created: false };
      replaces = existing?.id;
    }
    const task = newTask(randomUUID(), this.ownerId, requestId);
    task.operations = operationRecords(task.id, operations, task.startTimeMs);
    task.submitted = operations;
    const r = await this.deps.repo.create(task, replaces ? { replaces } : {});
    if (!r.created) return r;
    this.start(task, operations, 0, requestedBy);
    return r;
  }

  /**
   * `POST /task/{id}:resume`, which Orca calls for a failed, retryable task: the operations from the first one that
   * did not succeed run again under the same task id, on this replica (it takes the task over). Results of the
   * operations that succeeded stay; the failure's EXCEPTION goes. Undefined when the task does not exist.
   */
  async resume(id: string, requestedBy = 'unknown'): Promise<Task | undefined> {
    const task = await this.get(id);
    if (!task) return undefined;
    if (!task.status.failed || !task.status.retryable) {
      const state = task.status.completed ? (task.status.failed ? 'failed, not retryable' : 'succeeded') : 'running';
      throw new ScaleAgentError(
        'CONFLICT',
        `Task ${id} cannot be resumed: only a failed, retryable task can (it ${
          state === 'running' ? 'is still running' : `has ${state}`
        })`,
      );
    }
    if (!task.submitted || task.submitted.length !== task.operations.length) {
      throw new ScaleAgentError(
        'CONFLICT',
        `Task ${id} cannot be resumed: its operations were not recorded (it was created by an older plugin-server)`,
      );
    }
    const from = Math.max(
      0,
      task.operations.findIndex((o) => o.state !== 'succeeded'),
    );
    const now = Date.now();
    const sentBefore = mayHaveRunOn(task.operations[from]);
    task.operations = [
      ...task.operations.slice(0, from),
      ...operationRecords(task.id, task.submitted, now).slice(from),
    ];
    if (sentBefore.length > 0) task.operations[from]!.sentBeforeOnSessions = sentBefore;
    task.resultObjects = task.resultObjects.filter((r) => !isException(r));
    const read = task.updatedAtMs;
    reopenTask(task, `Resuming task from operation ${from + 1} of ${task.operations.length}`);
    await this.takeOver(task, read);
    this.start(task, task.submitted, from, requestedBy);
    return structuredClone(task);
  }

  /**
   * `POST /{cloudProvider}/task/{id}/restart` (Orca's restartTaskViaOperations, for a task whose Clouddriver went
   * away): the operations given run under the existing task id, from scratch. Refused while the task runs here.
   */
  async restart(id: string, operations: NormalizedOperation[], requestedBy = 'unknown'): Promise<Task | undefined> {
    const task = await this.get(id);
    if (!task) return undefined;
    // As Clouddriver's restartCloudProviderTask: only a task failed as retryable (by PATCH, or its replica's end).
    if (this.running.has(id) || !task.status.failed || !task.status.retryable) {
      throw new ScaleAgentError(
        'CONFLICT',
        `Task ${id} cannot be restarted: only a failed, retryable task can (${
          task.status.completed
            ? `it has ${task.status.failed ? 'failed, not retryable' : 'succeeded'}`
            : 'it is running'
        })`,
      );
    }
    const now = Date.now();
    task.operations = operationRecords(task.id, operations, now);
    task.submitted = operations;
    task.resultObjects = [];
    const read = task.updatedAtMs;
    reopenTask(task, `Restarting task with ${operations.length} operation(s)`);
    await this.takeOver(task, read);
    this.start(task, operations, 0, requestedBy);
    return structuredClone(task);
  }

  /**
   * `PATCH /{cloudProvider}/task/{id}` with `{"retry": bool}` (Orca's updateTaskRetryability, on its forced-retry
   * path): fails the task, retryable or not, as Clouddriver's `task.fail(retry)` does, so a restart may run it again.
   * Refused (409) while the task runs: its replica is alive (a replica that stops has its tasks failed as retryable
   * by the others within seconds, see reap()), and failing a task that is still running would let a restart run its
   * operations twice at once. Undefined when the task does not exist.
   */
  async failAsRequested(id: string, retry: boolean): Promise<Task | undefined> {
    const task = await this.get(id);
    if (!task) return undefined;
    if (!task.status.completed || this.running.has(id)) {
      throw new ScaleAgentError(
        'CONFLICT',
        `Task ${id} is still running on plugin-server ${ownerHost(task.ownerId)}, which is alive; it is not failed ` +
          '(a task whose plugin-server stops is failed as retryable within seconds, and can then be resumed)',
      );
    }
    const read = task.updatedAtMs;
    failTask(task, `Orchestration failed: marked failed on request (retry: ${retry})`, retry);
    if (task.updatedAtMs === read) task.updatedAtMs += 1;
    if (!(await this.deps.repo.saveIfUnchanged(task, read))) {
      throw new ScaleAgentError('CONFLICT', `Task ${id} changed while it was being marked failed; ask again`);
    }
    return structuredClone(task);
  }

  /**
   * Cancels a task running on this replica (the scale-agent route `POST /scale-agent/tasks/{id}/cancel`; Clouddriver
   * has no cancel of tasks). Operations not yet sent are never sent; the one at its agent stops if none of its writes
   * went out, else runs to its end and is reported as it ended (proto Cancel). The task then fails, not retryable, with
   * a message saying it was cancelled, unless its last operation ran to its end: then it ends as that operation did.
   * A finished task is answered as it is (`cancelling: false`); one running on another replica is passed to it
   * (cancelAtOwner) unless `localOnly` (a cancel a peer passed here); undefined when the task does not exist.
   */
  async cancel(
    id: string,
    requestedBy = 'unknown',
    localOnly = false,
  ): Promise<{ task: Task; cancelling: boolean } | undefined> {
    const live = this.running.get(id);
    const controller = this.cancels.get(id);
    if (!live || !controller) {
      const task = await this.get(id);
      if (!task) return undefined;
      if (task.status.completed) return { task, cancelling: false };
      // Running on a peer (the request reached another replica): that replica cancels it.
      const atOwner = localOnly ? undefined : this.deps.cancelAtOwner?.(task.ownerId, id, requestedBy);
      if (atOwner) {
        const { cancelling } = await atOwner.catch((e: unknown) => {
          throw new ScaleAgentError(
            'UNAVAILABLE',
            `Task ${id} runs on plugin-server ${ownerHost(task.ownerId)}, which did not take the cancel: ${
              (e as Error).message
            }`,
            { cause: e },
          );
        });
        return { task: (await this.get(id)) ?? task, cancelling };
      }
      throw new ScaleAgentError(
        'CONFLICT',
        `Task ${id} runs on plugin-server ${ownerHost(task.ownerId)}, which published no address for cancels (a ` +
          'replica of an older version): only that replica can cancel it',
      );
    }
    if (!controller.signal.aborted) {
      addHistory(live, ORCHESTRATION, `Cancel requested by ${requestedBy}`);
      void this.save(live);
      const accounts = [...new Set(live.operations.map((o) => o.account))];
      this.deps.audit?.record({
        who: requestedBy,
        what: 'cancel task',
        account: accounts.join(','),
        result: 'ok',
        task: id,
      });
      controller.abort(`cancelled by ${requestedBy}`);
    }
    return { task: structuredClone(live), cancelling: true };
  }

  /** This runner owns the reopened task from now on, unless another replica took it over first. */
  private async takeOver(task: Task, readUpdatedAtMs: number): Promise<void> {
    task.ownerId = this.ownerId;
    // reopenTask stamps the time; a resume within the same millisecond as the read must still differ from it.
    if (task.updatedAtMs === readUpdatedAtMs) task.updatedAtMs += 1;
    if (!(await this.deps.repo.saveIfUnchanged(task, readUpdatedAtMs))) {
      throw new ScaleAgentError('CONFLICT', `Task ${task.id} changed while it was being taken over; ask again`);
    }
  }

  private start(task: Task, operations: NormalizedOperation[], from: number, requestedBy: string): void {
    this.running.set(task.id, task);
    this.requesters.set(task.id, requestedBy);
    const cancel = new AbortController();
    this.cancels.set(task.id, cancel);
    void this.run(task, operations, from, cancel.signal).finally(() => {
      this.running.delete(task.id);
      this.requesters.delete(task.id);
      if (this.cancels.get(task.id) === cancel) this.cancels.delete(task.id);
    });
  }

  /** The live copy for a running task (no store round trip), else the stored one. */
  async get(id: string): Promise<Task | undefined> {
    const live = this.running.get(id);
    return live ? structuredClone(live) : this.deps.repo.get(id);
  }

  /** Newest first; running tasks as they are now. */
  async list(limit: number): Promise<Task[]> {
    return (await this.deps.repo.list({ limit })).map((t) =>
      this.running.has(t.id) ? structuredClone(this.running.get(t.id)!) : t,
    );
  }

  /** Operations of running tasks that have not finished. */
  pending(): OperationRecord[] {
    const out: OperationRecord[] = [];
    for (const t of this.running.values()) {
      for (const o of t.operations) if (o.state !== 'succeeded' && o.state !== 'failed') out.push({ ...o });
    }
    return out.sort((a, b) => a.queuedAt - b.queuedAt);
  }

  async operation(operationId: string): Promise<OperationRecord | undefined> {
    const taskId = operationId.slice(0, operationId.lastIndexOf('.'));
    const task = await this.get(taskId);
    return task?.operations.find((o) => o.operationId === operationId);
  }

  /** Waits for the writes queued so far (tests and shutdown). */
  async flush(): Promise<void> {
    await Promise.all(this.saving.values());
  }

  /** Shutdown: writes the store refuses are no longer tried again (flush() then returns). */
  stop(): void {
    this.stopped = true;
  }

  private save(task: Task): Promise<void> {
    const snapshot = structuredClone(task);
    const prev = this.saving.get(task.id) ?? Promise.resolve();
    // Writes of one task are chained, so a slow earlier write never lands after a later one.
    const next = prev.then(() => this.saveUntilStored(snapshot, task));
    this.saving.set(task.id, next);
    void next.finally(() => {
      if (this.saving.get(task.id) === next) this.saving.delete(task.id);
    });
    return next;
  }

  /**
   * A write the store refuses (a full disk, MySQL unreachable) is made again until it lands: the last one carries
   * the task's outcome, and once the task stops running, pollers read it from the store; a write dropped here left
   * the task running there for ever (seen with MariaDB's disk full: operations polled as running until the client
   * gave up). The task stays running in this process, answered from memory, until then. Ends when the runner stops.
   */
  private async saveUntilStored(snapshot: Task, live: Task): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        if (!(await this.deps.repo.save(snapshot))) {
          // A peer failed it (this replica looked dead: frozen, or cut off from the database) or took it over: the
          // store keeps their outcome, and this run's is not recorded.
          this.deps.log.warn(
            { taskId: snapshot.id },
            "task no longer this replica's to write; its outcome is not recorded",
          );
          // Its run stops before its next operation, and reads of the task answer from the store.
          if (this.running.get(live.id) === live) this.running.delete(live.id);
          return;
        }
        if (attempt > 1) this.deps.log.info({ taskId: snapshot.id, attempt }, 'task saved');
        return;
      } catch (e) {
        if (attempt === 1) this.deps.log.error({ taskId: snapshot.id, err: e }, 'cannot save task; trying again');
        if (this.stopped) return;
        await sleep(Math.min(SAVE_RETRY_BASE_MS * 2 ** (attempt - 1), SAVE_RETRY_MAX_MS));
      }
    }
  }

  private async run(task: Task, operations: NormalizedOperation[], from: number, signal: AbortSignal): Promise<void> {
    try {
      for (let index = from; index < operations.length; index++) {
        // Failed by a peer or taken over meanwhile (saveUntilStored): not this runner's to go on with.
        if (this.running.get(task.id) !== task) return;
        if (signal.aborted) {
          const op = operations[index]!;
          const rec = task.operations[index]!;
          rec.state = 'failed';
          rec.ok = false;
          rec.error = `${String(signal.reason)} before it started`;
          rec.retryable = false;
          this.fail(
            task,
            op.type,
            `${String(signal.reason)} before operation ${index + 1} of ${operations.length} (${op.type}) started` +
              (index > from ? '; the operations before it ran to their end' : ''),
            false,
            undefined,
          );
          await this.save(task);
          return;
        }
        const ok = await this.runOne(task, operations[index]!, task.operations[index]!, signal);
        if (!ok) return;
      }
      completeTask(task);
      await this.save(task);
    } catch (e) {
      const message = (e as Error).message;
      this.deps.log.error({ taskId: task.id, err: e }, 'task failed unexpectedly');
      failTask(task, `Orchestration failed: ${message}`, false);
      await this.save(task);
    }
  }

  private async runOne(
    task: Task,
    op: NormalizedOperation,
    rec: OperationRecord,
    signal: AbortSignal,
  ): Promise<boolean> {
    const phase = OPERATION_PHASES[op.type];
    const opClass = OPERATION_CLASSES[op.type];
    const log = this.deps.log.child({
      taskId: task.id,
      operationId: rec.operationId,
      type: op.type,
      account: op.account,
    });
    addHistory(task, ORCHESTRATION, `Processing op: ${opClass}`);
    void this.save(task);
    const started = Date.now();
    const outcome = await this.deps.dispatcher.execute(
      {
        operationId: rec.operationId,
        account: op.account,
        type: op.type,
        payload: op.payload,
        cacheWaitMs: this.deps.options.cacheWaitMs,
        requestedBy: this.requesters.get(task.id),
        signal,
        ...(rec.sentBeforeOnSessions ? { sentBeforeOnSessions: rec.sentBeforeOnSessions } : {}),
      },
      {
        waitingForAgent: () => {
          rec.state = 'waiting-for-agent';
          addHistory(task, phase, `Waiting for an agent to hold account ${op.account}`);
          void this.save(task);
        },
        sent: (session, attempt) => {
          rec.state = 'sent';
          rec.attempts = attempt;
          rec.agentId = session.agentId;
          rec.sessionId = session.id;
          rec.sentAt = Date.now();
          addHistory(
            task,
            phase,
            attempt > 1
              ? `Sent ${op.type} again to agent ${session.agentId} (attempt ${attempt}) after its agent disconnected`
              : `Sent ${op.type} to agent ${session.agentId} for account ${op.account}`,
          );
          void this.save(task);
        },
      },
    );
    const finish = (ok: boolean, result = ok ? 'succeeded' : 'failed'): void => {
      rec.finishedAt = Date.now();
      rec.durationMs = rec.finishedAt - started;
      rec.state = ok ? 'succeeded' : 'failed';
      rec.ok = ok;
      this.deps.metrics?.operations.inc({ type: op.type, result });
      this.deps.metrics?.duration.observe({ type: op.type }, rec.durationMs / 1000);
      this.deps.audit?.record({
        who: this.requesters.get(task.id) ?? 'unknown',
        what: `operation ${op.type}`,
        account: op.account,
        result,
        task: task.id,
        operation: rec.operationId,
      });
    };
    if (outcome.kind === 'failed') {
      finish(false, outcome.cancelled ? 'cancelled' : 'agent_unavailable');
      rec.error = outcome.message;
      rec.retryable = outcome.retryable;
      log.warn({ error: outcome.message }, 'operation failed before a result came back');
      this.fail(task, op.type, outcome.message, outcome.retryable, undefined);
      await this.save(task);
      return false;
    }
    const r = outcome.result;
    rec.resultAt = Date.now();
    rec.resourceVersions = { ...r.resourceVersions };
    const body = parseResultJson(r.resultJson);
    for (const m of body.messages ?? []) addHistory(task, phase, m);
    if (!r.ok) {
      rec.agentFailed = true;
      finish(false, body.errorCode === 'SA_ERR_CANCELLED' ? 'cancelled' : 'failed');
      rec.error = r.error;
      rec.errorCode = body.errorCode;
      rec.retryable = body.retryable ?? false;
      this.fail(task, op.type, r.error || 'the agent reported a failure', body.retryable ?? false, body.result);
      await this.save(task);
      return false;
    }
    rec.state = 'waiting-for-cache';
    // A peer replica holding the agent already waited for its cache (it writes the account's cache).
    const barrier =
      outcome.barrier ??
      (await this.deps.barrier.waitFor(op.account, r.resourceVersions, this.deps.options.cacheWaitMs));
    this.deps.metrics?.barrierWait.observe((Date.now() - rec.resultAt) / 1000);
    if (!barrier.ok) {
      finish(false, 'cache_behind');
      const message =
        `${op.type} succeeded on the cluster, but the cache did not catch up within ` +
        `${Math.round(this.deps.options.cacheWaitMs / 1000)} s (still waiting for ${barrier.pending.join(', ')}); ` +
        `reads may be stale until the agent's stream delivers them`;
      rec.error = message;
      rec.retryable = true;
      this.fail(task, op.type, message, true, undefined);
      await this.save(task);
      return false;
    }
    if (barrier.waitedFor.length > 0) {
      addHistory(task, phase, `Cache holds ${barrier.waitedFor.length} written object(s) at their new versions`);
    }
    finish(true);
    if (body.result !== undefined && body.result !== null) task.resultObjects.push(body.result);
    else if (RESULT_EXPECTED.has(op.type)) task.resultObjects.push({ manifestNamesByNamespace: {} });
    return true;
  }

  private fail(task: Task, type: OperationType, message: string, retryable: boolean, result: unknown): void {
    const exception = isException(result)
      ? { ...result, ...(retryable ? { retryable } : {}) }
      : exceptionResult(type, message, { retryable });
    task.resultObjects.push(exception);
    failTask(task, `Orchestration failed: ${OPERATION_CLASSES[type]} | ScaleAgentError: [${message}]`, retryable);
  }
}

function operationRecords(taskId: string, operations: NormalizedOperation[], queuedAt: number): OperationRecord[] {
  return operations.map((op, index) => ({
    operationId: `${taskId}.${index}`,
    taskId,
    index,
    type: op.type,
    account: op.account,
    state: 'queued',
    attempts: 0,
    queuedAt,
  }));
}

function isException(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && (v as { type?: unknown }).type === 'EXCEPTION';
}

function parseResultJson(bytes: Uint8Array): ResultBody {
  if (bytes.length === 0) return {};
  try {
    const v = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as unknown;
    return typeof v === 'object' && v !== null ? (v as ResultBody) : {};
  } catch {
    return {};
  }
}

/**
 * The sessions on which an operation's earlier attempts were sent and may have run without their outcome coming back:
 * the last attempt when it was sent and its agent did not answer with a failure (it went away, did not answer in
 * time, its replica stopped, or it answered with a success whose cache wait then failed), plus those before it. A
 * resume sends them as `sent_before_on_sessions`, so that an agent that does not remember the id does not apply twice
 * what a repeat would (proto Operation).
 */
function mayHaveRunOn(rec: OperationRecord | undefined): string[] {
  if (!rec) return [];
  const earlier = rec.sentBeforeOnSessions ?? [];
  if (rec.sentAt === undefined || rec.agentFailed === true) return earlier;
  const last = rec.sessionId ?? 'unknown';
  return earlier.includes(last) ? earlier : [...earlier, last];
}
