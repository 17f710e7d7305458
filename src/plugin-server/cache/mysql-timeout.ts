/**
 * Client-side timeouts for every MySQL statement. A link that drops packets without a reset (a partition, a
 * blackholed route) leaves a statement waiting until TCP gives up, minutes later; meanwhile the pool's connections
 * hang and nothing the replica decides from the store (leases, tasks) moves. mysql2 then fails the statement and
 * closes its connection, so the pool opens a fresh one once the link is back.
 */
import type { QueryOptions } from 'mysql2/promise';

/**
 * Longer than any statement of a healthy store takes here (an InnoDB lock wait is the slowest, and its default
 * limit, innodb_lock_wait_timeout, is 50 s: a write waiting that long is better retried than awaited).
 */
export const QUERY_TIMEOUT_MS = 15_000;

/** Schema migrations may rewrite whole tables, and the migration lock waits up to 60 s for another replica. */
export const MIGRATION_TIMEOUT_MS = 15 * 60_000;

/** The statement with its client-side timeout. */
export function timed(sql: string, timeoutMs = QUERY_TIMEOUT_MS): QueryOptions {
  return { sql, timeout: timeoutMs };
}
