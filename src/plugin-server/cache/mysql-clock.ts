/**
 * The database's clock in ms since the epoch, as SQL. Every decision replicas sharing a MySQL store take about time —
 * leases, task staleness, replica views' expiry — is taken at it, never at a replica's own wall clock, which may be
 * stepped or skewed (docs/architecture.md#account-ownership). CURRENT_TIMESTAMP is fixed for the duration of one
 * statement, so the expression gives one value wherever it appears in a statement.
 */
export const DB_NOW = 'FLOOR(UNIX_TIMESTAMP(CURRENT_TIMESTAMP(3)) * 1000)';
