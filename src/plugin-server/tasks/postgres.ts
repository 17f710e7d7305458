import type pg from 'pg';
import { DB_NOW } from '../cache/postgres-clock.js';
import { createPostgresPool, inTransaction } from '../cache/postgres-pool.js';
import type { Task } from './model.js';
import type { TaskRepository } from './repository.js';
import { StorageFullSignal } from '../storage-full.js';

/** Not marked or written for $n ms of the database's clock. */
const silent = (param: string): string => `alive_at < ${DB_NOW} - ${param}`;

/**
 * Tasks in PostgreSQL next to the cache: the same contract as the MySQL repository (repository.ts), so finished tasks
 * survive a restart and the database decides which of two concurrent POSTs with one clientRequestId creates the task
 * (a UNIQUE request id; the second INSERT waits for the first's commit, then inserts nothing).
 */
export class PostgresTaskRepository implements TaskRepository {
  readonly type = 'postgres' as const;
  private readonly pool: pg.Pool;
  /** Writes refused for lack of space are noted here (readiness reports them; see storage-full.ts). */
  private readonly storageFull: StorageFullSignal;

  constructor(url: string, options: { storageFull?: StorageFullSignal } = {}) {
    this.storageFull = options.storageFull ?? new StorageFullSignal();
    this.pool = createPostgresPool(url, { max: 4 });
  }

  async init(): Promise<void> {
    // Two replicas starting at once may both create the table: CREATE … IF NOT EXISTS can still fail on the
    // catalogue's unique index when they race, so the statements run under an advisory lock held for the transaction.
    await inTransaction(this.pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext('scale-agent sa_tasks'))");
      await client.query(`CREATE TABLE IF NOT EXISTS sa_tasks (
        id VARCHAR(64) COLLATE "C" NOT NULL PRIMARY KEY,
        request_id VARCHAR(255) COLLATE "C" NULL UNIQUE,
        owner_id VARCHAR(300) COLLATE "C" NOT NULL,
        completed BOOLEAN NOT NULL,
        started_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        body TEXT NOT NULL,
        alive_at BIGINT NOT NULL
      )`);
      await client.query('CREATE INDEX IF NOT EXISTS sa_tasks_started ON sa_tasks (started_at)');
      await client.query('CREATE INDEX IF NOT EXISTS sa_tasks_incomplete ON sa_tasks (started_at) WHERE NOT completed');
    });
  }

  async create(task: Task, options: { replaces?: string } = {}): Promise<{ task: Task; created: boolean }> {
    const created = await inTransaction(this.pool, async (client) => {
      if (task.requestId && options.replaces) {
        await client.query('UPDATE sa_tasks SET request_id = NULL WHERE id = $1 AND request_id = $2', [
          options.replaces,
          task.requestId,
        ]);
      }
      const r = await client.query(
        `INSERT INTO sa_tasks (id, request_id, owner_id, completed, started_at, updated_at, body, alive_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, ${DB_NOW}) ON CONFLICT DO NOTHING`,
        [
          task.id,
          task.requestId ?? null,
          task.ownerId,
          task.status.completed,
          task.startTimeMs,
          task.updatedAtMs,
          JSON.stringify(task),
        ],
      );
      return r.rowCount === 1;
    }).catch((e: unknown) => {
      throw this.storageFull.noted(e);
    });
    if (created) return { task, created: true };
    const existing = task.requestId ? await this.getByRequestId(task.requestId) : undefined;
    if (!existing) throw new Error(`task ${task.id} was not stored and no task holds its request id`);
    return { task: existing, created: false };
  }

  async save(task: Task): Promise<boolean> {
    // Only the owner's, only while running (see MysqlTaskRepository.save).
    const r = await this.pool
      .query(
        `UPDATE sa_tasks SET completed = $1, updated_at = $2, body = $3, alive_at = ${DB_NOW}
         WHERE id = $4 AND owner_id = $5 AND NOT completed`,
        [task.status.completed, task.updatedAtMs, JSON.stringify(task), task.id, task.ownerId],
      )
      .catch((e: unknown) => {
        throw this.storageFull.noted(e);
      });
    return r.rowCount === 1;
  }

  async get(id: string): Promise<Task | undefined> {
    const r = await this.pool.query<{ body: string }>('SELECT body FROM sa_tasks WHERE id = $1', [id]);
    return r.rows[0] ? parse(r.rows[0]) : undefined;
  }

  async getByRequestId(requestId: string): Promise<Task | undefined> {
    const r = await this.pool.query<{ body: string }>('SELECT body FROM sa_tasks WHERE request_id = $1', [requestId]);
    return r.rows[0] ? parse(r.rows[0]) : undefined;
  }

  async list(options: { limit: number; incompleteOnly?: boolean }): Promise<Task[]> {
    const r = await this.pool.query<{ body: string }>(
      `SELECT body FROM sa_tasks ${options.incompleteOnly ? 'WHERE NOT completed' : ''}
       ORDER BY started_at DESC, id DESC LIMIT $1`,
      [options.limit],
    );
    return r.rows.map(parse);
  }

  /**
   * One statement: PostgreSQL locks rows, not index entries, so the heartbeat and a task's own save (one row each
   * time) cannot lock in opposite orders as they could in InnoDB (see MysqlTaskRepository.heartbeat).
   */
  async heartbeat(ownerId: string): Promise<void> {
    await this.pool.query(`UPDATE sa_tasks SET alive_at = ${DB_NOW} WHERE owner_id = $1 AND NOT completed`, [ownerId]);
  }

  async abandoned(staleMs: number): Promise<Task[]> {
    const r = await this.pool.query<{ body: string }>(
      `SELECT body FROM sa_tasks WHERE NOT completed AND ${silent('$1')} ORDER BY started_at LIMIT 1000`,
      [staleMs],
    );
    return r.rows.map(parse);
  }

  async saveIfAbandoned(task: Task, staleMs: number): Promise<boolean> {
    // Conditional on the owner still being silent, so a live owner's task is never failed under it.
    const r = await this.pool.query(
      `UPDATE sa_tasks SET completed = $1, updated_at = $2, body = $3, alive_at = ${DB_NOW}
       WHERE id = $4 AND NOT completed AND ${silent('$5')}`,
      [task.status.completed, task.updatedAtMs, JSON.stringify(task), task.id, staleMs],
    );
    return r.rowCount === 1;
  }

  async saveIfUnchanged(task: Task, readUpdatedAtMs: number): Promise<boolean> {
    const r = await this.pool.query(
      `UPDATE sa_tasks SET completed = $1, updated_at = $2, owner_id = $3, body = $4, alive_at = ${DB_NOW}
       WHERE id = $5 AND updated_at = $6`,
      [task.status.completed, task.updatedAtMs, task.ownerId, JSON.stringify(task), task.id, readUpdatedAtMs],
    );
    return r.rowCount === 1;
  }

  async purge(options: { olderThan: number; keep: number }): Promise<number> {
    // PostgreSQL's DELETE has no LIMIT: the batch is chosen by a subquery, as MySQL's LIMIT 10000 bounds it there.
    const byAge = await this.pool.query(
      `DELETE FROM sa_tasks WHERE id IN
       (SELECT id FROM sa_tasks WHERE completed AND updated_at < $1 LIMIT 10000)`,
      [options.olderThan],
    );
    let n = byAge.rowCount ?? 0;
    // Beyond the newest `keep`: the started_at of the keep-th newest task is the cut.
    const cut = await this.pool.query<{ started_at: number }>(
      'SELECT started_at FROM sa_tasks ORDER BY started_at DESC LIMIT 1 OFFSET $1',
      [options.keep],
    );
    if (cut.rows[0]) {
      const byCount = await this.pool.query(
        `DELETE FROM sa_tasks WHERE id IN
         (SELECT id FROM sa_tasks WHERE completed AND started_at <= $1 LIMIT 10000)`,
        [cut.rows[0].started_at],
      );
      n += byCount.rowCount ?? 0;
    }
    return n;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

function parse(row: { body: string }): Task {
  return JSON.parse(row.body) as Task;
}
