/**
 * PostgreSQL's clock in ms since the epoch, as SQL: the counterpart of mysql-clock.ts, for the same reason (every
 * decision replicas sharing a store take about time is taken at the database's clock). `statement_timestamp()` is
 * fixed for the duration of one statement, so the expression gives one value wherever it appears in a statement —
 * `now()` would be fixed for the whole transaction, and `clock_timestamp()` moves within a statement.
 */
export const PG_NOW = '(floor(extract(epoch from statement_timestamp()) * 1000))::bigint';
