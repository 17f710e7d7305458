/**
 * The database's clock in ms since the epoch, as PostgreSQL SQL: the counterpart of mysql-clock.ts, read for the same
 * decisions (leases, task staleness, replica views' expiry), never a replica's own wall clock.
 *
 * `DB_NOW` is statement_timestamp(): the start of the current statement, one value wherever it appears in it (as
 * MySQL's CURRENT_TIMESTAMP is). Not now(), which is the start of the whole transaction and would age with it.
 */
export const DB_NOW = '(FLOOR(EXTRACT(EPOCH FROM statement_timestamp()) * 1000))::bigint';

/**
 * The clock as it is when the expression is evaluated, for the decisions read right after taking row locks
 * (`SELECT … FOR UPDATE` in a materialized CTE, the clock in the query over it): a statement that waited on a lock
 * then judges the rows at the time it got them, not at the time it started waiting.
 */
export const DB_CLOCK_NOW = '(FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000))::bigint';
