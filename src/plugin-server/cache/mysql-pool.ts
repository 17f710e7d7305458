/**
 * The one way the plugin-server opens a MySQL pool (cache, tasks, dynamic accounts), so every connection carries the
 * same session settings.
 *
 * A replica that stops between two statements of a transaction (a frozen process, a stalled VM, a partition that
 * keeps the TCP connection open) keeps that transaction's row locks: the lease row of an account it was renewing, or
 * the lease rows its write fenced on. Every other replica's claim of those accounts then waits on the lock — the
 * takeover the lease exists for never happens while the stopped replica lives. MariaDB can end such a transaction
 * itself: `idle_transaction_timeout` rolls back and disconnects a session idle inside a transaction for that long,
 * releasing its locks (the stopped replica's write is then lost with its connection, as a fenced-out write would be).
 * A healthy replica is never idle inside a transaction for more than the time between two awaits. MySQL has no such
 * setting (the statement is refused with ER_UNKNOWN_SYSTEM_VARIABLE and skipped): there a claim waits until the
 * stopped replica resumes or its connection drops (docs/operations.md).
 */
import mysql, { type Pool } from 'mysql2/promise';
import { createLogger } from '../../shared/logging.js';

/** Seconds a session may sit idle inside a transaction before MariaDB rolls it back (see above). */
export const IDLE_TRANSACTION_TIMEOUT_S = 5;

/** MySQL's error number for a system variable it does not know (MariaDB's idle_transaction_timeout on MySQL). */
const ER_UNKNOWN_SYSTEM_VARIABLE = 1193;

export interface StorePoolOptions {
  connectionLimit: number;
  /** Large integers (BIGINT columns) as strings, where a value may pass 2^53. */
  bigNumbers?: boolean;
  /** CLIENT_MULTI_STATEMENTS: only for a pool whose statements carry nothing but escaped literals (mysql-write.ts). */
  multipleStatements?: boolean;
}

const log = createLogger({ name: 'plugin-server' });

/**
 * mysql2's own formatting, except that a statement without values goes as it is: mysql2 otherwise scans all of it
 * for placeholders, and the cache's upsert, its values already written in as literals (mysql-literal.ts), is
 * megabytes long. (With no values the scan finds nothing to replace, so the text sent is the same either way.)
 */
function formatStatement(sql: string, values: unknown, timezone?: string): string {
  if (values === undefined || values === null || (Array.isArray(values) && values.length === 0)) return sql;
  return mysql.format(sql, values as Parameters<typeof mysql.format>[1], false, timezone);
}

export function createStorePool(url: string, options: StorePoolOptions): Pool {
  const pool = mysql.createPool({
    uri: url,
    connectionLimit: options.connectionLimit,
    charset: 'utf8mb4',
    queryFormat: formatStatement,
    ...(options.bigNumbers ? { supportBigNumbers: true, bigNumberStrings: true } : {}),
    ...(options.multipleStatements ? { multipleStatements: true } : {}),
  });
  // The core pool's event, emitted with each new connection before it is handed out; commands on a connection run
  // in order, so the setting is in place before the connection's first statement.
  pool.pool.on('connection', (conn) => {
    // The store writes values into its statements as literals with backslash escapes (mysql-literal.ts, and mysql2's
    // own escaper alike). A server whose sql_mode has NO_BACKSLASH_ESCAPES reads a backslash as itself, so an object
    // holding `\'` would end its literal early: a broken write, or SQL from an object. Every session drops the mode.
    conn.query(
      "SET SESSION sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',NO_BACKSLASH_ESCAPES,', ','))",
      (err: unknown) => {
        if (err) log.warn({ err: (err as Error).message }, 'could not set the sql_mode of a MySQL session');
      },
    );
    conn.query(`SET SESSION idle_transaction_timeout = ${IDLE_TRANSACTION_TIMEOUT_S}`, (err: unknown) => {
      if (err && (err as { errno?: number }).errno !== ER_UNKNOWN_SYSTEM_VARIABLE) {
        // Not fatal: the session works as before, without the bound.
        log.warn({ err: (err as Error).message }, 'could not bound idle transactions on a MySQL session');
      }
    });
  });
  return pool;
}
