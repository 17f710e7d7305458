/**
 * What the SQL stores (mysql.ts, postgres.ts) share, whatever their dialect: the tables' columns and how their rows
 * map to the store's objects and leases, the named indexes they keep in columns, how a resourceVersion is kept as a
 * number, how many times a write a deadlock rolled back runs again, and which schema versions a replica may run
 * against.
 */
import { compareResourceVersions } from '../../shared/proto.js';
import type { AccountLease, CachedObject } from './store.js';

/** A row as the drivers return it: column name → value. */
export type SqlRow = Record<string, unknown>;

/** Attempts of a transaction the database rolled back as a deadlock (or serialization) victim, the first included. */
export const DEADLOCK_ATTEMPTS = 5;

/** Connections for leases, account records and replica views (the stores' `control` pools). */
export const CONTROL_CONNECTIONS = 2;

/** Rows per multi-row upsert, and a byte cap per statement (well under MariaDB's default 16 MiB packet). */
export const MAX_ROWS_PER_STATEMENT = 500;
export const MAX_BYTES_PER_STATEMENT = 4 * 1024 * 1024;

/**
 * The named indexes the SQL stores keep, each in a column of sa_objects with its own key: the views'
 * (views/app-index.ts) registers under these names. An index of another name would need a column of its own.
 */
export const COLUMN_OF_INDEX: Readonly<Record<string, 'app' | 'cluster' | 'owner_uid'>> = {
  application: 'app',
  cluster: 'cluster',
  owner: 'owner_uid',
};

/** The resourceVersion as the number column `rv_num` keeps it, or null: compared as text then (last wins). */
export function rvNumber(rv: string): string | null {
  // 19 digits: BIGINT UNSIGNED on MySQL, NUMERIC(19) on PostgreSQL. Longer or non-numeric versions compare as
  // "different" (last wins).
  return /^\d{1,19}$/.test(rv) ? rv : null;
}

/** The newer of two resourceVersions ('' is none); one that cannot be compared wins. */
export function maxResourceVersion(a: string, b: string): string {
  if (!a) return b;
  const c = compareResourceVersions(b, a);
  return c === undefined || c > 0 ? b : a;
}

export const LEASE_COLUMNS =
  'account, replica, replica_url, session_id, agent_id, state, expires_at, released_at, generation, failed_at, ' +
  'share_load, handoff_to';

export function toLease(r: SqlRow): AccountLease {
  return {
    account: r.account as string,
    replica: r.replica as string,
    replicaUrl: r.replica_url as string,
    sessionId: r.session_id as string,
    agentId: r.agent_id as string,
    state: r.state === 'FAILED' ? 'FAILED' : 'ACTIVE',
    generation: Number(r.generation),
    expiresAt: Number(r.expires_at),
    releasedAt: Number(r.released_at),
    failedAt: Number(r.failed_at),
    // MySQL's TINYINT (0/1), PostgreSQL's BOOLEAN.
    shareLoad: r.share_load === true || Number(r.share_load) === 1,
    handoffTo: r.handoff_to as string,
  };
}

export const SELECT_OBJECT =
  'SELECT account, grp, api_version, kind, namespace, name, uid, resource_version, object_json FROM sa_objects ';
export const SELECT_INDEXED =
  'SELECT account, grp, api_version, kind, namespace, name, uid, resource_version, object_json, app, cluster, ' +
  'owner_uid FROM sa_objects ';

export function toCached(r: SqlRow): CachedObject {
  return {
    account: r.account as string,
    group: r.grp as string,
    apiVersion: r.api_version as string,
    kind: r.kind as string,
    namespace: r.namespace as string,
    name: r.name as string,
    uid: r.uid as string,
    resourceVersion: r.resource_version as string,
    json: (r.object_json as string | null) ?? '',
  };
}

export function toIndexed(r: SqlRow): CachedObject {
  return {
    ...toCached(r),
    index: { application: r.app as string, cluster: r.cluster as string, owner: r.owner_uid as string },
  };
}

/**
 * What a replica knowing `known` migrations of the `store` ('MySQL', 'PostgreSQL') makes of a database at `applied`
 * whose rows require `required` (the oldest schema version a plugin-server may still run against it).
 */
export function schemaCompatibility(
  known: number,
  applied: number,
  required: number,
  store = 'MySQL',
): { ok: true } | { ok: false; message: string } {
  if (applied <= known || required <= known) return { ok: true };
  return {
    ok: false,
    message:
      `${store} schema is at version ${applied}, which needs a plugin-server that knows at least ${required} ` +
      `migrations; this one knows ${known}. Upgrade this replica (docs/operations.md#upgrades)`,
  };
}
