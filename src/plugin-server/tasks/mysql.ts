import type { Pool, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { createStorePool } from '../cache/mysql-pool.js';
import { DB_NOW } from '../cache/mysql-clock.js';
import { timed } from '../cache/mysql-timeout.js';
import type { Task } from './model.js';
import type { TaskRepository } from './repository.js';
import { StorageFullSignal } from '../storage-full.js';

/** Running tasks marked alive per statement (a replica runs at most a few hundred at once). */
const HEARTBEAT_BATCH = 500;

/** Not marked or written for ? ms of the database's clock (rows a previous version wrote: by its updated_at). */
const SILENT = `COALESCE(alive_at, updated_at) < ${DB_NOW} - ?`;

/**
 * Tasks in MySQL next to the cache, so finished tasks (and their results) survive a plugin-server restart. The
 * request id is a UNIQUE column: the database, not this process, decides which of two concurrent POSTs with one
 * clientRequestId creates the task.
 */
export class MysqlTaskRepository implements TaskRepository {
  readonly type = 'mysql' as const;
  private readonly pool: Pool;
  /** Writes refused for lack of space are noted here (readiness reports them; see storage-full.ts). */
  private readonly storageFull: StorageFullSignal;

  constructor(url: string, options: { storageFull?: StorageFullSignal } = {}) {
    this.storageFull = options.storageFull ?? new StorageFullSignal();
    this.pool = createStorePool(url, { connectionLimit: 4 });
  }

  async init(): Promise<void> {
    await this.pool.query(
      timed(`CREATE TABLE IF NOT EXISTS sa_tasks (
        id VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
        request_id VARCHAR(255) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
        owner_id VARCHAR(300) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
        completed TINYINT NOT NULL,
        started_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        body LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
        alive_at BIGINT NULL,
        UNIQUE KEY sa_tasks_request (request_id),
        KEY sa_tasks_started (started_at),
        KEY sa_tasks_incomplete (completed, started_at)
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`),
    );
    await this.addAliveAt();
  }

  /**
   * alive_at: when the task was last marked or written, at the database's clock (staleness is judged at it). Added to
   * tables made before it; NULL in rows a replica of the previous version wrote during a rolling upgrade, which are
   * judged by updated_at (that replica's clock) as that version judged them.
   */
  private async addAliveAt(): Promise<void> {
    const [cols] = await this.pool.query<RowDataPacket[]>(
      timed(
        "SELECT COUNT(*) AS n FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'sa_tasks' " +
          "AND COLUMN_NAME = 'alive_at'",
      ),
    );
    if (Number(cols[0]?.n) > 0) return;
    // Two replicas starting together may both add it: the second is told the column exists (1060).
    await this.pool.query(timed('ALTER TABLE sa_tasks ADD COLUMN alive_at BIGINT NULL')).catch((e: unknown) => {
      if ((e as { errno?: number }).errno !== 1060) throw e;
    });
  }

  async create(task: Task, options: { replaces?: string } = {}): Promise<{ task: Task; created: boolean }> {
    const conn = await this.pool.getConnection();
    try {
      await conn.beginTransaction();
      if (task.requestId && options.replaces) {
        await conn.query(timed('UPDATE sa_tasks SET request_id = NULL WHERE id = ? AND request_id = ?'), [
          options.replaces,
          task.requestId,
        ]);
      }
      const [r] = await conn.query<ResultSetHeader>(
        timed(`INSERT IGNORE INTO sa_tasks (id, request_id, owner_id, completed, started_at, updated_at, body, alive_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ${DB_NOW})`),
        [
          task.id,
          task.requestId ?? null,
          task.ownerId,
          task.status.completed ? 1 : 0,
          task.startTimeMs,
          task.updatedAtMs,
          JSON.stringify(task),
        ],
      );
      await conn.commit();
      if (r.affectedRows === 1) return { task, created: true };
    } catch (e) {
      await conn.rollback().catch(() => undefined);
      throw this.storageFull.noted(e);
    } finally {
      conn.release();
    }
    const existing = task.requestId ? await this.getByRequestId(task.requestId) : undefined;
    if (!existing) throw new Error(`task ${task.id} was not stored and no task holds its request id`);
    return { task: existing, created: false };
  }

  async save(task: Task): Promise<boolean> {
    // Only the owner's, only while running: a task a peer failed (reaped) or took over (resume, restart: owner_id
    // moves with saveIfUnchanged) is not written over by the replica that ran it before.
    const [r] = await this.pool
      .query<ResultSetHeader>(
        timed(
          `UPDATE sa_tasks SET completed = ?, updated_at = ?, body = ?, alive_at = ${DB_NOW} ` +
            'WHERE id = ? AND owner_id = ? AND completed = 0',
        ),
        [task.status.completed ? 1 : 0, task.updatedAtMs, JSON.stringify(task), task.id, task.ownerId],
      )
      .catch((e: unknown) => {
        throw this.storageFull.noted(e);
      });
    return r.affectedRows === 1;
  }

  async get(id: string): Promise<Task | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>(timed('SELECT body FROM sa_tasks WHERE id = ?'), [id]);
    return rows[0] ? parse(rows[0]) : undefined;
  }

  async getByRequestId(requestId: string): Promise<Task | undefined> {
    const [rows] = await this.pool.query<RowDataPacket[]>(timed('SELECT body FROM sa_tasks WHERE request_id = ?'), [
      requestId,
    ]);
    return rows[0] ? parse(rows[0]) : undefined;
  }

  async list(options: { limit: number; incompleteOnly?: boolean }): Promise<Task[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      timed(`SELECT body FROM sa_tasks ${options.incompleteOnly ? 'WHERE completed = 0' : ''}
       ORDER BY started_at DESC, id DESC LIMIT ?`),
      [options.limit],
    );
    return rows.map(parse);
  }

  /**
   * Finds the owner's running tasks with a plain (non-locking) read, then marks them by primary key. One UPDATE with
   * `WHERE owner_id = ? AND completed = 0` walked the (completed, started_at) index and locked its entries before the
   * rows, while a task's own save locks the row and then moves its entry in that index (completed 0 → 1): opposite
   * orders, so InnoDB chose one as a deadlock victim (seen in the fault suite: a task's last write refused). By primary
   * key the heartbeat locks rows only, never that index, and the cycle cannot form; the index is forced because with
   * `completed = 0` in the WHERE the optimizer still picked the secondary index for a short id list (and deadlocked).
   * A task that completes in between is skipped by `completed = 0`; one created in between is fresh anyway.
   */
  async heartbeat(ownerId: string): Promise<void> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      timed('SELECT id FROM sa_tasks WHERE owner_id = ? AND completed = 0'),
      [ownerId],
    );
    const ids = rows.map((r) => r.id as string);
    for (let i = 0; i < ids.length; i += HEARTBEAT_BATCH) {
      await this.pool.query(
        timed(`UPDATE sa_tasks FORCE INDEX (PRIMARY) SET alive_at = ${DB_NOW} WHERE id IN (?) AND completed = 0`),
        [ids.slice(i, i + HEARTBEAT_BATCH)],
      );
    }
  }

  async abandoned(staleMs: number): Promise<Task[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      timed(`SELECT body FROM sa_tasks WHERE completed = 0 AND ${SILENT} ORDER BY started_at LIMIT 1000`),
      [staleMs],
    );
    return rows.map(parse);
  }

  async saveIfAbandoned(task: Task, staleMs: number): Promise<boolean> {
    // Conditional on the owner still being silent, so a live owner's task is never failed under it.
    const [r] = await this.pool.query<ResultSetHeader>(
      timed(
        `UPDATE sa_tasks SET completed = ?, updated_at = ?, body = ?, alive_at = ${DB_NOW} ` +
          `WHERE id = ? AND completed = 0 AND ${SILENT}`,
      ),
      [task.status.completed ? 1 : 0, task.updatedAtMs, JSON.stringify(task), task.id, staleMs],
    );
    return r.affectedRows === 1;
  }

  async saveIfUnchanged(task: Task, readUpdatedAtMs: number): Promise<boolean> {
    const [r] = await this.pool.query<ResultSetHeader>(
      timed(
        `UPDATE sa_tasks SET completed = ?, updated_at = ?, owner_id = ?, body = ?, alive_at = ${DB_NOW} ` +
          'WHERE id = ? AND updated_at = ?',
      ),
      [task.status.completed ? 1 : 0, task.updatedAtMs, task.ownerId, JSON.stringify(task), task.id, readUpdatedAtMs],
    );
    return r.affectedRows === 1;
  }

  async purge(options: { olderThan: number; keep: number }): Promise<number> {
    let n = 0;
    const [byAge] = await this.pool.query<ResultSetHeader>(
      timed('DELETE FROM sa_tasks WHERE completed = 1 AND updated_at < ? LIMIT 10000'),
      [options.olderThan],
    );
    n += byAge.affectedRows;
    // Beyond the newest `keep`: the started_at of the keep-th newest task is the cut.
    const [cut] = await this.pool.query<RowDataPacket[]>(
      timed('SELECT started_at FROM sa_tasks ORDER BY started_at DESC LIMIT 1 OFFSET ?'),
      [options.keep],
    );
    if (cut[0]) {
      const [byCount] = await this.pool.query<ResultSetHeader>(
        timed('DELETE FROM sa_tasks WHERE completed = 1 AND started_at <= ? LIMIT 10000'),
        [cut[0].started_at],
      );
      n += byCount.affectedRows;
    }
    return n;
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}

function parse(row: RowDataPacket): Task {
  return JSON.parse(row.body as string) as Task;
}
