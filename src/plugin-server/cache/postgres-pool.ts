/**
 * The one way the plugin-server opens a PostgreSQL pool (cache, tasks, dynamic accounts), so every connection carries
 * the same session settings — the counterpart of mysql-pool.ts, whose comment gives the reason for the first one:
 *
 * - `idle_in_transaction_session_timeout`: a replica that stops between two statements of a transaction (a frozen
 *   process, a stalled VM, a partition that keeps the TCP connection open) keeps that transaction's row locks — the
 *   lease row of an account it was renewing, the lease rows its write fenced on — and every other replica's claim of
 *   those accounts waits on them. PostgreSQL ends such a session itself after this long, rolling its transaction back
 *   and releasing the locks, as MariaDB's `idle_transaction_timeout` does (same 5 s).
 * - `statement_timeout`: the server cancels a statement running longer (a lock wait is the slowest a healthy store
 *   sees); the statement fails and is retried or reported rather than awaited.
 * - `query_timeout`: the client's own bound, a little longer than the server's, for a link that drops packets without
 *   a reset, where the server's cancel never arrives. The caller then releases the connection with the error, so the
 *   pool discards it and opens a fresh one once the link is back.
 * - TCP keepalive, so a half-open connection sitting in the pool is found dead by the kernel.
 */
import pg from 'pg';
import { ScaleAgentError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logging.js';
import { IDLE_TRANSACTION_TIMEOUT_S } from './mysql-pool.js';
import { QUERY_TIMEOUT_MS } from './mysql-timeout.js';

/** PostgreSQL's type oid of int8 (BIGINT), which node-postgres returns as a string by default. */
const INT8_OID = 20;

/** How much longer the client waits than the server's statement_timeout before it gives up on the link. */
const CLIENT_TIMEOUT_MARGIN_MS = 5_000;

export interface PostgresPoolOptions {
  /** Connections the pool opens at most. */
  max: number;
  /** The server's statement_timeout for every statement on these connections (default QUERY_TIMEOUT_MS). */
  statementTimeoutMs?: number;
  /**
   * Large integers (BIGINT columns) as strings, where a value may pass 2^53; by default they are numbers (every
   * BIGINT the stores keep — ms timestamps, counts, sequence numbers — stays far below 2^53).
   */
  bigNumbers?: boolean;
}

const log = createLogger({ name: 'plugin-server' });

/** The client-side timeout that goes with a server statement_timeout (for a statement given a longer one). */
export function clientTimeoutMs(statementTimeoutMs: number): number {
  return statementTimeoutMs + CLIENT_TIMEOUT_MARGIN_MS;
}

export function createPostgresPool(url: string, options: PostgresPoolOptions): pg.Pool {
  const statementTimeoutMs = options.statementTimeoutMs ?? QUERY_TIMEOUT_MS;
  const types = new pg.TypeOverrides();
  if (!options.bigNumbers) types.setTypeParser(INT8_OID, (v: string) => Number(v));
  const pool = new pg.Pool({
    connectionString: url,
    max: options.max,
    // Sent in the startup message: in force from the connection's first statement.
    statement_timeout: statementTimeoutMs,
    idle_in_transaction_session_timeout: IDLE_TRANSACTION_TIMEOUT_S * 1000,
    query_timeout: clientTimeoutMs(statementTimeoutMs),
    // Opening a connection over a dead link must fail too, not hang.
    connectionTimeoutMillis: clientTimeoutMs(statementTimeoutMs),
    keepAlive: true,
    types,
  });
  // An idle connection that fails (the server restarted, the idle-in-transaction timeout, a reset) emits 'error' on
  // the pool, which without a listener would crash the process; the pool drops it and opens another when needed.
  pool.on('error', (err) => {
    log.warn({ err: err.message }, 'an idle PostgreSQL connection failed; the pool replaces it');
  });
  return pool;
}

/**
 * Whether the connection is still in step with the server after `e`: an error the server answered (it has a
 * SQLSTATE) leaves it usable for a ROLLBACK; a client timeout or a broken connection does not (a ROLLBACK would
 * queue behind the statement that never answers), so the connection is discarded, and the server rolls back the
 * transaction when it goes.
 */
function answeredByServer(e: unknown): boolean {
  const code = (e as { code?: unknown } | undefined)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code);
}

/**
 * Runs `body` in a transaction on a connection of `pool` (READ COMMITTED, PostgreSQL's default: no gap locks, so
 * writes of different accounts never wait on each other) and commits; rolls back when `body` throws. The one way the
 * PostgreSQL stores (cache, tasks, dynamic accounts) take a connection for a transaction: a connection the server
 * ends while it is checked out emits 'error', which with no listener would crash the process.
 */
export async function inTransaction<T>(pool: pg.Pool, body: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (e) {
    throw new ScaleAgentError('UNAVAILABLE', `PostgreSQL store unreachable: ${(e as Error).message}`, { cause: e });
  }
  let broken: Error | undefined;
  // The idle-in-transaction timeout after this process was frozen, a server restart: note it, and discard the
  // connection.
  const onError = (e: Error): void => {
    broken = e;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await body(client);
    await client.query('COMMIT');
    return result;
  } catch (e) {
    if (answeredByServer(e)) await client.query('ROLLBACK').catch((r: Error) => (broken = r));
    else broken = e as Error;
    throw e;
  } finally {
    client.removeListener('error', onError);
    client.release(broken);
  }
}
