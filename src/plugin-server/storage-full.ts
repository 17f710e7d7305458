/**
 * A full disk under MySQL (or PostgreSQL) does not stop it answering: `SELECT 1` (the readiness ping) goes on
 * succeeding while every write that must grow a file fails — InnoDB writes into pages it already has, so updates in
 * place may pass and new rows (tasks, newly watched objects) do not. So the SQL clients note each write refused for
 * lack of space here, and readiness reports it until none has been refused for a while (the disk was freed, or grown).
 */

/** MariaDB/MySQL: ER_RECORD_FILE_FULL ("The table … is full"), ER_DISK_FULL. */
const FULL_ERRNOS = new Set([1114, 1021]);
/** PostgreSQL's SQLSTATE disk_full ("could not extend file …: No space left on device"). */
const PG_DISK_FULL = '53100';
/** "Error writing file … (errno: 28 …)" (ER_ERROR_ON_WRITE), "Got error 28 from storage engine": 28 is ENOSPC. */
const ENOSPC_TEXT = /errno:? 28\b|error 28 from/i;

/** Whether `e` (or an error it wraps) says the database server ran out of space. */
export function isStorageFull(e: unknown): boolean {
  for (let x = e, depth = 0; x && depth < 5; x = (x as { cause?: unknown }).cause, depth++) {
    const { errno, code, message } = x as { errno?: unknown; code?: unknown; message?: unknown };
    if (typeof errno === 'number' && FULL_ERRNOS.has(errno)) return true;
    if (code === 'ENOSPC' || code === PG_DISK_FULL) return true;
    if (typeof message === 'string' && ENOSPC_TEXT.test(message)) return true;
  }
  return false;
}

/** How long after the last refused write readiness still reports it. */
export const STORAGE_FULL_REPORT_MS = 10_000;

export class StorageFullSignal {
  private lastAt = -Infinity;
  private lastMessage = '';

  constructor(
    private readonly now: () => number = Date.now,
    private readonly reportMs = STORAGE_FULL_REPORT_MS,
  ) {}

  /** Notes `e` if it is a full disk; returns it, so a catch block can `throw signal.noted(e)`. */
  noted<E>(e: E): E {
    if (isStorageFull(e)) {
      this.lastAt = this.now();
      this.lastMessage = (e as Error).message ?? String(e);
    }
    return e;
  }

  /** Why the store is not fit to take writes, while a write was refused for lack of space recently. */
  reason(): string | undefined {
    const ago = this.now() - this.lastAt;
    if (ago > this.reportMs) return undefined;
    return `out of space: a write was refused ${Math.round(ago / 1000)} s ago (${this.lastMessage})`;
  }
}
