import type { Task } from './model.js';
import type { TaskRepository } from './repository.js';

/** Tasks in this process; the newest `maxTasks` are kept. */
export class MemoryTaskRepository implements TaskRepository {
  readonly type = 'memory' as const;
  private readonly tasks = new Map<string, Task>();
  private readonly byRequest = new Map<string, string>();

  constructor(private readonly maxTasks = 10_000) {}

  async init(): Promise<void> {}

  async create(task: Task, options: { replaces?: string } = {}): Promise<{ task: Task; created: boolean }> {
    // Synchronous from check to insert: two concurrent POSTs with one clientRequestId cannot both create.
    if (task.requestId) {
      const existingId = this.byRequest.get(task.requestId);
      const existing = existingId === undefined ? undefined : this.tasks.get(existingId);
      if (existing && existing.id !== options.replaces) return { task: structuredClone(existing), created: false };
      this.byRequest.set(task.requestId, task.id);
    }
    this.tasks.set(task.id, structuredClone(task));
    this.evict();
    return { task, created: true };
  }

  async save(task: Task): Promise<boolean> {
    const stored = this.tasks.get(task.id);
    if (!stored || stored.status.completed || stored.ownerId !== task.ownerId) return false;
    this.tasks.set(task.id, structuredClone(task));
    return true;
  }

  async get(id: string): Promise<Task | undefined> {
    const t = this.tasks.get(id);
    return t && structuredClone(t);
  }

  async getByRequestId(requestId: string): Promise<Task | undefined> {
    const id = this.byRequest.get(requestId);
    return id === undefined ? undefined : this.get(id);
  }

  async list(options: { limit: number; incompleteOnly?: boolean }): Promise<Task[]> {
    const out: Task[] = [];
    for (const t of [...this.tasks.values()].reverse()) {
      if (options.incompleteOnly && t.status.completed) continue;
      out.push(structuredClone(t));
      if (out.length >= options.limit) break;
    }
    return out;
  }

  // One process: its tasks die with it, nothing is ever abandoned by another owner.
  async heartbeat(): Promise<void> {}
  async abandoned(): Promise<Task[]> {
    return [];
  }
  async saveIfAbandoned(): Promise<boolean> {
    return false;
  }

  async saveIfUnchanged(task: Task, readUpdatedAtMs: number): Promise<boolean> {
    const stored = this.tasks.get(task.id);
    if (!stored || stored.updatedAtMs !== readUpdatedAtMs) return false;
    this.tasks.set(task.id, structuredClone(task));
    return true;
  }

  async purge(options: { olderThan: number; keep: number }): Promise<number> {
    const newestFirst = [...this.tasks.values()].reverse();
    let n = 0;
    for (const [i, t] of newestFirst.entries()) {
      if (!t.status.completed || (i < options.keep && t.updatedAtMs >= options.olderThan)) continue;
      this.tasks.delete(t.id);
      if (t.requestId && this.byRequest.get(t.requestId) === t.id) this.byRequest.delete(t.requestId);
      n += 1;
    }
    return n;
  }

  async close(): Promise<void> {}

  private evict(): void {
    while (this.tasks.size > this.maxTasks) {
      const oldest = this.tasks.keys().next().value as string;
      const t = this.tasks.get(oldest);
      this.tasks.delete(oldest);
      if (t?.requestId && this.byRequest.get(t.requestId) === oldest) this.byRequest.delete(t.requestId);
    }
  }
}
