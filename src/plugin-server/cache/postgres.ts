import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { ScaleAgentError } from '../../shared/errors.js';
import { parseApiVersion } from '../../shared/proto.js';
import { StorageFullSignal } from '../storage-full.js';
import {
  decideClaim,
  fencedOut,
  heldBy,
  LeaseLost,
  orphanGraceOver,
  reportState,
  type ClaimOutcome,
  type LeaseClaim,
  type LeaseHolder,
  type WriteFence,
} from '../ownership.js';
import { AppliedListeners } from './applied-listeners.js';
import { IndexRegistry } from './index-registry.js';
import { MIGRATION_TIMEOUT_MS, QUERY_TIMEOUT_MS } from './mysql-timeout.js';
import { DB_CLOCK_NOW, DB_NOW } from './postgres-clock.js';
import { clientTimeoutMs, createPostgresPool, inTransaction } from './postgres-pool.js';
import { ScopeTable, tombstonesPrunable, type ScopeState } from './scopes.js';
import {
  COLUMN_OF_INDEX,
  CONTROL_CONNECTIONS,
  DEADLOCK_ATTEMPTS,
  LEASE_COLUMNS,
  MAX_BYTES_PER_STATEMENT,
  MAX_ROWS_PER_STATEMENT,
  maxResourceVersion,
  rvNumber,
  schemaCompatibility,
  SELECT_INDEXED,
  SELECT_OBJECT,
  toCached,
  toIndexed,
  toLease,
  type SqlRow,
} from './sql-rows.js';
import {
  normalizeAccountRecord,
  scopeId,
  searchKey,
  type AccountLease,
  type AccountRecord,
  type AppliedListener,
  type ApplyStats,
  type CachedObject,
  type IndexDefinition,
  type IndexPair,
  type KindCount,
  type ListFilter,
  type ObjectKey,
  type ObjectKeyOf,
  type ReplicaView,
  type ResumePointRecord,
  type StoreBackend,
  type StoreChange,
  type StoreOp,
} from './store.js';

/**
 * Schema migrations of the PostgreSQL store, applied in order at startup in one transaction under an advisory lock,
 * so replicas starting together do not race (PostgreSQL's DDL is transactional: a migration that fails leaves
 * nothing behind). The same tables and columns as the MySQL store's, created in their current shape; the rules for
 * later migrations are MySQL's (mysql.ts MIGRATIONS): additive, or named in COMPATIBLE_FROM.
 *
 * Key and index columns are `COLLATE "C"`: byte order, as MySQL's ascii_bin/utf8mb4_bin columns and the memory
 * store's comparisons, whatever the database's default collation. Object bodies, records and views are `text`, not
 * `jsonb`: the store hands back each object's JSON exactly as it was received (store.ts CachedObject.json), which
 * jsonb would not keep (it reorders keys and drops whitespace), and parsing every body on ingest would cost the
 * server CPU for nothing the store queries; large values are compressed by TOAST either way.
 */
export const POSTGRES_MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE IF NOT EXISTS sa_objects (
      account TEXT COLLATE "C" NOT NULL,
      grp TEXT COLLATE "C" NOT NULL,
      kind_lc TEXT COLLATE "C" NOT NULL,
      namespace TEXT COLLATE "C" NOT NULL,
      name TEXT COLLATE "C" NOT NULL,
      sync_gen BIGINT NOT NULL DEFAULT 0,
      kind TEXT COLLATE "C" NOT NULL,
      api_version TEXT COLLATE "C" NOT NULL,
      uid TEXT COLLATE "C" NOT NULL,
      deleted BOOLEAN NOT NULL DEFAULT FALSE,
      object_json TEXT NULL,
      updated_at BIGINT NOT NULL,
      resource_version TEXT COLLATE "C" NOT NULL,
      rv_num NUMERIC(19, 0) NULL,
      app TEXT COLLATE "C" NOT NULL DEFAULT '',
      cluster TEXT COLLATE "C" NOT NULL DEFAULT '',
      owner_uid TEXT COLLATE "C" NOT NULL DEFAULT '',
      PRIMARY KEY (account, grp, kind_lc, namespace, name)
    )`,
    // As MySQL's (migration 3 there): the kind index leads with the kind, for /search and /credentials across
    // accounts and for the tombstone prune; the application and owner indexes serve the views.
    'CREATE INDEX IF NOT EXISTS sa_objects_by_kind ON sa_objects (kind_lc, deleted, account, namespace, name)',
    'CREATE INDEX IF NOT EXISTS sa_objects_by_app ON sa_objects (app, account, cluster)',
    'CREATE INDEX IF NOT EXISTS sa_objects_by_owner ON sa_objects (account, owner_uid)',
    `CREATE TABLE IF NOT EXISTS sa_sync_state (
      account TEXT COLLATE "C" NOT NULL,
      grp TEXT COLLATE "C" NOT NULL,
      kind_lc TEXT COLLATE "C" NOT NULL,
      namespace TEXT COLLATE "C" NOT NULL,
      kind TEXT COLLATE "C" NOT NULL,
      version TEXT COLLATE "C" NOT NULL,
      gen BIGINT NOT NULL,
      syncing BOOLEAN NOT NULL,
      synced BOOLEAN NOT NULL,
      resource_version TEXT COLLATE "C" NOT NULL,
      PRIMARY KEY (account, grp, kind_lc, namespace)
    )`,
    `CREATE TABLE IF NOT EXISTS sa_accounts (
      name TEXT COLLATE "C" NOT NULL PRIMARY KEY,
      record TEXT NOT NULL,
      updated_at BIGINT NOT NULL
    )`,
    `CREATE TABLE IF NOT EXISTS sa_account_leases (
      account TEXT COLLATE "C" NOT NULL PRIMARY KEY,
      replica TEXT COLLATE "C" NOT NULL,
      replica_url TEXT COLLATE "C" NOT NULL,
      session_id TEXT COLLATE "C" NOT NULL,
      agent_id TEXT COLLATE "C" NOT NULL,
      state TEXT COLLATE "C" NOT NULL,
      expires_at BIGINT NOT NULL,
      released_at BIGINT NOT NULL,
      generation BIGINT NOT NULL DEFAULT 0,
      failed_at BIGINT NOT NULL DEFAULT 0
    )`,
    'CREATE INDEX IF NOT EXISTS sa_account_leases_by_replica ON sa_account_leases (replica)',
    `CREATE TABLE IF NOT EXISTS sa_replica_views (
      replica TEXT COLLATE "C" NOT NULL PRIMARY KEY,
      replica_url TEXT COLLATE "C" NOT NULL,
      view_json TEXT NOT NULL,
      expires_at BIGINT NOT NULL
    )`,
  ],
  // 2: load-sharing agent replicas (ownership.ts decideClaim), as MySQL's migration 8: whether the holder shares
  // load, and the agent a handoff was asked for. Columns with defaults, so additive.
  [
    `ALTER TABLE sa_account_leases
      ADD COLUMN IF NOT EXISTS share_load BOOLEAN NOT NULL DEFAULT FALSE,
      ADD COLUMN IF NOT EXISTS handoff_to TEXT COLLATE "C" NOT NULL DEFAULT ''`,
  ],
];

/** Migrations the previous versions cannot run against, by number (none yet): as mysql.ts COMPATIBLE_FROM. */
export const POSTGRES_COMPATIBLE_FROM: Readonly<Record<number, number>> = {};

/** The advisory lock key of the migrations (any constant; replicas of one database agree on it). */
const MIGRATION_LOCK = 0x5ca1e;

/** SQLSTATEs of a transaction the server rolled back to break a cycle: serialization failure, deadlock. */
const RETRIED_STATES = new Set(['40001', '40P01']);

/** Whether the server chose this transaction as a deadlock (or serialization) victim, raw or as a cause. */
function isDeadlock(e: unknown): boolean {
  for (let x = e, depth = 0; x && depth < 3; x = (x as { cause?: unknown }).cause, depth++) {
    const code = (x as { code?: unknown }).code;
    if (typeof code === 'string' && RETRIED_STATES.has(code)) return true;
  }
  return false;
}

/** One statement with the client's bound on it (postgres-pool.ts): longer than the server's statement_timeout. */
interface Statement {
  text: string;
  values?: unknown[];
  query_timeout?: number;
}

const OBJECT_COLUMNS = [
  ['account', 'text'],
  ['grp', 'text'],
  ['kind_lc', 'text'],
  ['namespace', 'text'],
  ['name', 'text'],
  ['sync_gen', 'bigint'],
  ['kind', 'text'],
  ['api_version', 'text'],
  ['uid', 'text'],
  ['deleted', 'boolean'],
  ['object_json', 'text'],
  ['updated_at', 'bigint'],
  ['resource_version', 'text'],
  ['rv_num', 'numeric'],
  ['app', 'text'],
  ['cluster', 'text'],
  ['owner_uid', 'text'],
] as const;

/** The columns an object takes from a newer change (the key is the same; sync_gen is stamped by every change). */
const REPLACED_COLUMNS = OBJECT_COLUMNS.map(([c]) => c).filter(
  (c) => !['account', 'grp', 'kind_lc', 'namespace', 'name', 'sync_gen'].includes(c),
);

/** Whether the incoming row is newer than the stored one (store.ts): by number where both have one, else differs. */
const NEWER =
  '(CASE WHEN EXCLUDED.rv_num IS NOT NULL AND o.rv_num IS NOT NULL THEN EXCLUDED.rv_num > o.rv_num ' +
  'ELSE EXCLUDED.resource_version <> o.resource_version END)';

/**
 * The upsert of a batch of changes, one array per column (`unnest`): one statement text whatever the row count, so
 * the server plans it once per connection, with 17 parameters rather than 17 per row. The object is replaced only
 * when the change is newer, and its sync_gen is stamped either way, the "mark" of mark-and-sweep. Every assignment
 * reads the stored row as it was (PostgreSQL's SET does not see earlier assignments), so each repeats the test.
 */
const UPSERT =
  `INSERT INTO sa_objects AS o (${OBJECT_COLUMNS.map(([c]) => c).join(', ')}) ` +
  `SELECT * FROM unnest(${OBJECT_COLUMNS.map(([, t], i) => `$${i + 1}::${t}[]`).join(', ')}) ` +
  'ON CONFLICT (account, grp, kind_lc, namespace, name) DO UPDATE SET sync_gen = EXCLUDED.sync_gen, ' +
  REPLACED_COLUMNS.map((c) => `${c} = CASE WHEN ${NEWER} THEN EXCLUDED.${c} ELSE o.${c} END`).join(', ');

/** A batch of object rows being gathered for one upsert: a column array each, and the keys it holds. */
class RowBatch {
  readonly columns: unknown[][] = OBJECT_COLUMNS.map(() => []);
  readonly keys = new Set<string>();
  bytes = 0;

  get size(): number {
    return this.keys.size;
  }

  push(key: string, row: readonly unknown[], bytes: number): void {
    row.forEach((v, i) => this.columns[i]!.push(v));
    this.keys.add(key);
    this.bytes += bytes;
  }
}

/** PostgreSQL store, shared by plugin-server replicas: MysqlCacheStore's counterpart (mysql.ts says more of each). */
export class PostgresCacheStore implements StoreBackend {
  readonly type = 'postgres' as const;
  private readonly applied = new AppliedListeners();
  /** Objects: the agents' writes and the reads of the views. */
  private readonly pool: pg.Pool;
  /** Ownership: leases, account records and replica views, on connections of their own (as MysqlCacheStore's). */
  private readonly control: pg.Pool;
  private readonly scopes = new ScopeTable();
  private readonly loadedAccounts = new Set<string>();
  private readonly registry = new IndexRegistry({
    names: Object.keys(COLUMN_OF_INDEX),
    why: `the PostgreSQL store keeps only the indexes ${Object.keys(COLUMN_OF_INDEX).join(', ')} (columns of sa_objects)`,
  });
  /** Whether this process has written: indexes are registered before (rows it wrote would lack their keys). */
  private written = false;
  private readonly storageFull: StorageFullSignal;

  /** Transactions run again after the server chose them as a deadlock victim (for tests and diagnostics). */
  deadlockRetries = 0;

  constructor(url: string, options: { connectionLimit?: number; storageFull?: StorageFullSignal } = {}) {
    this.storageFull = options.storageFull ?? new StorageFullSignal();
    this.pool = createPostgresPool(url, { max: options.connectionLimit ?? 8 });
    this.control = createPostgresPool(url, { max: CONTROL_CONNECTIONS });
  }

  async init(): Promise<void> {
    await inTransaction(this.pool, async (client) => {
      const run = (text: string, values?: unknown[]) =>
        client.query({ text, values, query_timeout: clientTimeoutMs(MIGRATION_TIMEOUT_MS) } as Statement);
      await run(`SET LOCAL statement_timeout = ${MIGRATION_TIMEOUT_MS}`);
      await run('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
      await run(
        'CREATE TABLE IF NOT EXISTS sa_schema_migrations (version INT NOT NULL PRIMARY KEY, ' +
          'applied_at BIGINT NOT NULL, compatible_from INT NOT NULL DEFAULT 0)',
      );
      const { rows } = await run(
        'SELECT COALESCE(MAX(version), 0) AS v, COALESCE(MAX(compatible_from), 0) AS r FROM sa_schema_migrations',
      );
      const current = Number(rows[0]?.v ?? 0);
      const known = POSTGRES_MIGRATIONS.length;
      if (current > known) {
        // A newer replica migrated it (a rolling upgrade under way): run beside it unless its migrations forbid.
        const verdict = schemaCompatibility(known, current, Number(rows[0]?.r ?? 0), 'PostgreSQL');
        if (!verdict.ok) throw new ScaleAgentError('CONFLICT', verdict.message);
      }
      for (let i = current; i < known; i++) {
        for (const sql of POSTGRES_MIGRATIONS[i] ?? []) await run(sql);
        await run('INSERT INTO sa_schema_migrations (version, applied_at, compatible_from) VALUES ($1, $2, $3)', [
          i + 1,
          Date.now(),
          POSTGRES_COMPATIBLE_FROM[i + 1] ?? 0,
        ]);
      }
    });
  }

  private async loadScopes(client: pg.PoolClient | pg.Pool, account: string, force = false): Promise<void> {
    if (this.loadedAccounts.has(account) && !force) return;
    const { rows } = await client.query<SqlRow>(
      'SELECT grp, kind, namespace, version, gen, syncing, synced, resource_version FROM sa_sync_state ' +
        'WHERE account = $1',
      [account],
    );
    this.scopes.dropAccount(account);
    for (const r of rows) {
      this.scopes.set({
        key: { account, group: r.grp as string, kind: r.kind as string, namespace: r.namespace as string },
        version: r.version as string,
        gen: Number(r.gen),
        syncing: r.syncing === true,
        synced: r.synced === true,
        resourceVersion: r.resource_version as string,
      });
    }
    this.loadedAccounts.add(account);
  }

  /** Applies ops in one transaction; a deadlock victim runs again (as MysqlCacheStore.apply). */
  async apply(ops: readonly StoreOp[], fence?: WriteFence): Promise<ApplyStats> {
    this.written = true;
    for (let attempt = 1; ; attempt++) {
      let stats: ApplyStats;
      try {
        stats = await this.applyOnce(ops, fence);
      } catch (e) {
        if (attempt >= DEADLOCK_ATTEMPTS || !isDeadlock(e)) throw e;
        this.deadlockRetries += 1;
        await sleep(5 + Math.random() * 20 * attempt);
        continue;
      }
      this.applied.notify(ops);
      return stats;
    }
  }

  onApplied(listener: AppliedListener): () => void {
    return this.applied.add(listener);
  }

  addIndex(definition: IndexDefinition): void {
    this.registry.add(definition, this.written);
  }

  indexes(): readonly IndexDefinition[] {
    return this.registry.list();
  }

  private async applyOnce(ops: readonly StoreOp[], fence: WriteFence | undefined): Promise<ApplyStats> {
    const stats: ApplyStats = { applied: 0, skipped: 0, swept: 0, pruned: 0 };
    if (ops.length === 0) return stats;
    const accounts = new Set(ops.map((o) => (o.op === 'change' ? o.change.account : o.scope.account)));
    const dirty = new Map<string, ScopeState>();
    try {
      await inTransaction(this.pool, async (client) => {
        for (const a of accounts) await this.loadScopes(client, a);
        let batch = new RowBatch();
        // One statement at a time: node-postgres sends a query only once the previous one has answered anyway.
        const flush = async (): Promise<void> => {
          if (batch.size === 0) return;
          const rows = batch;
          batch = new RowBatch();
          stats.applied += rows.size;
          await client.query(UPSERT, rows.columns);
        };
        const now = Date.now();
        for (const op of ops) {
          if (op.op === 'change') {
            const [key, row] = this.changeRow(op.change, now, dirty);
            // One statement may not touch a row twice (ON CONFLICT DO UPDATE refuses): a second change of the same
            // object in the batch goes into the next statement, after the first.
            if (batch.keys.has(key)) await flush();
            batch.push(key, row, op.change.json.length + 200);
            if (batch.size >= MAX_ROWS_PER_STATEMENT || batch.bytes >= MAX_BYTES_PER_STATEMENT) await flush();
            continue;
          }
          await flush();
          if (op.op === 'syncStart') {
            const s = this.scopes.ensure(op.scope, op.version);
            s.gen += 1;
            s.syncing = true;
            s.synced = false;
            dirty.set(scopeId(s.key), s);
          } else if (op.op === 'syncEnd') {
            const existing = this.scopes.get(op.scope);
            const s = existing ?? this.scopes.ensure(op.scope, op.version);
            if (existing) {
              const params: unknown[] = [s.key.account, s.key.group, s.key.kind.toLowerCase(), s.gen];
              let where = 'account = $1 AND grp = $2 AND kind_lc = $3 AND sync_gen < $4';
              if (s.key.namespace) {
                params.push(s.key.namespace);
                where += ' AND namespace = $5';
              }
              const res = await client.query(`DELETE FROM sa_objects WHERE ${where}`, params);
              stats.swept += res.rowCount ?? 0;
              s.syncing = false;
              s.synced = true;
            }
            if (op.version) s.version = op.version;
            s.resourceVersion = op.resourceVersion;
            dirty.set(scopeId(s.key), s);
            stats.pruned += await this.pruneTombstones(client, s);
          } else {
            const s = this.scopes.get(op.scope);
            if (s && s.synced && !s.syncing) {
              s.resourceVersion = maxResourceVersion(s.resourceVersion, op.resourceVersion);
              dirty.set(scopeId(s.key), s);
              stats.pruned += await this.pruneTombstones(client, s);
            }
          }
        }
        await flush();
        for (const s of dirty.values()) {
          await client.query(
            'INSERT INTO sa_sync_state (account, grp, kind_lc, namespace, kind, version, gen, syncing, synced, ' +
              'resource_version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ' +
              'ON CONFLICT (account, grp, kind_lc, namespace) DO UPDATE SET kind = EXCLUDED.kind, ' +
              'version = EXCLUDED.version, gen = EXCLUDED.gen, syncing = EXCLUDED.syncing, ' +
              'synced = EXCLUDED.synced, resource_version = EXCLUDED.resource_version',
            [
              s.key.account,
              s.key.group,
              s.key.kind.toLowerCase(),
              s.key.namespace,
              s.key.kind,
              s.version,
              s.gen,
              s.syncing,
              s.synced,
              s.resourceVersion,
            ],
          );
        }
        if (fence) await this.checkFence(client, fence);
      });
      return stats;
    } catch (e) {
      // The in-memory scope states may be ahead of what was rolled back; reload them on next use.
      for (const a of accounts) this.loadedAccounts.delete(a);
      if (e instanceof LeaseLost || e instanceof ScaleAgentError) throw e;
      throw new ScaleAgentError('UNAVAILABLE', `PostgreSQL store write failed: ${(e as Error).message}`, {
        cause: this.storageFull.noted(e),
      });
    }
  }

  /**
   * The write's fence (ownership.ts fencedOut) as the transaction's last statement before its commit, as
   * MysqlCacheStore.checkFence: the lease rows share-locked from here to the commit, so a claim (which locks its row
   * for update) has either committed before — and the write is refused — or waits for this commit. The clock is
   * read after the locks are taken (DB_CLOCK_NOW), so a check that waited for a claim judges the lease it left.
   */
  private async checkFence(client: pg.PoolClient, fence: WriteFence): Promise<void> {
    if (fence.generations.size === 0) return;
    const { rows } = await client.query<SqlRow>(
      `WITH l AS MATERIALIZED (SELECT ${LEASE_COLUMNS} FROM sa_account_leases WHERE account = ANY($1) FOR SHARE) ` +
        `SELECT l.*, ${DB_CLOCK_NOW} AS now_ms FROM l`,
      [[...fence.generations.keys()]],
    );
    const leases = new Map(rows.map((r) => [r.account as string, toLease(r)]));
    const now = Math.max(0, ...rows.map((r) => Number(r.now_ms)));
    const lost = fencedOut(fence, (a) => leases.get(a), now);
    if (lost.length > 0) throw new LeaseLost(lost);
  }

  /** Drops the scope's tombstones at or below its resume point (as MysqlCacheStore.pruneTombstones). */
  private async pruneTombstones(client: pg.PoolClient, s: ScopeState): Promise<number> {
    const rv = rvNumber(s.resourceVersion);
    if (rv === null || !tombstonesPrunable(s, this.scopes)) return 0;
    const params: unknown[] = [s.key.kind.toLowerCase(), s.key.account, s.key.group, rv];
    let where = 'kind_lc = $1 AND deleted AND account = $2 AND grp = $3 AND rv_num <= $4::numeric';
    if (s.key.namespace) {
      params.push(s.key.namespace);
      where += ' AND namespace = $5';
    }
    const res = await client.query(`DELETE FROM sa_objects WHERE ${where}`, params);
    return res.rowCount ?? 0;
  }

  /** The object's key and its row, in OBJECT_COLUMNS order. */
  private changeRow(c: StoreChange, now: number, dirty: Map<string, ScopeState>): [string, unknown[]] {
    const { group } = parseApiVersion(c.apiVersion);
    const s = this.scopes.of(c.account, group, c.kind, c.namespace);
    if (s && s.synced && !s.syncing) {
      s.resourceVersion = maxResourceVersion(s.resourceVersion, c.resourceVersion);
      dirty.set(scopeId(s.key), s);
    }
    const deleted = c.type === 'DELETED';
    const kindLc = c.kind.toLowerCase();
    const key = `${c.account}\u0000${group}\u0000${kindLc}\u0000${c.namespace}\u0000${c.name}`;
    return [
      key,
      [
        c.account,
        group,
        kindLc,
        c.namespace,
        c.name,
        s?.gen ?? 0,
        c.kind,
        c.apiVersion,
        c.uid,
        deleted,
        deleted ? null : c.json,
        now,
        c.resourceVersion,
        rvNumber(c.resourceVersion),
        deleted ? '' : (c.index?.application ?? ''),
        deleted ? '' : (c.index?.cluster ?? ''),
        deleted ? '' : (c.index?.owner ?? ''),
      ],
    ];
  }

  async get(key: ObjectKey): Promise<CachedObject | undefined> {
    const params: unknown[] = [key.account, key.kind.toLowerCase(), key.namespace, key.name];
    let sql = SELECT_OBJECT + 'WHERE account = $1 AND kind_lc = $2 AND namespace = $3 AND name = $4 AND NOT deleted';
    if (key.group !== undefined) {
      params.push(key.group);
      sql += ' AND grp = $5';
    }
    const rows = await this.query(sql + ' ORDER BY grp LIMIT 1', params);
    return rows[0] ? toCached(rows[0]) : undefined;
  }

  async list(filter: ListFilter): Promise<CachedObject[]> {
    const params: unknown[] = [filter.account];
    let sql = SELECT_OBJECT + 'WHERE account = $1 AND NOT deleted';
    const and = (column: string, value: string) => {
      params.push(value);
      sql += ` AND ${column} = $${params.length}`;
    };
    if (filter.group !== undefined) and('grp', filter.group);
    if (filter.kind !== undefined) and('kind_lc', filter.kind.toLowerCase());
    if (filter.namespace !== undefined) and('namespace', filter.namespace);
    const rows = await this.query(sql + ' ORDER BY grp, kind_lc, namespace, name', params);
    return rows.map(toCached);
  }

  async searchKeys(
    kind: { group: string | undefined; kind: string },
    kindName: string,
    text: string,
  ): Promise<ObjectKeyOf[]> {
    const params: unknown[] = [kind.kind.toLowerCase()];
    let sql = 'SELECT account, grp, namespace, name FROM sa_objects WHERE kind_lc = $1 AND NOT deleted';
    if (kind.group !== undefined) {
      params.push(kind.group);
      sql += ` AND grp = $${params.length}`;
    }
    if (text) {
      // strpos is exact and case-sensitive, as Clouddriver's match on the key (the caller lower-cases the query).
      params.push(searchKey(kindName, '', '', '').slice(0, -2), text);
      sql += ` AND strpos($${params.length - 1} || account || ':' || namespace || ':' || name, $${params.length}) > 0`;
    }
    const rows = await this.query(sql + ' ORDER BY account, namespace, name', params);
    return rows.map((r) => ({
      account: r.account as string,
      group: r.grp as string,
      kind: kind.kind,
      namespace: r.namespace as string,
      name: r.name as string,
    }));
  }

  async byIndex(name: string, keys: readonly string[], account?: string): Promise<CachedObject[]> {
    this.registry.require(name);
    const column = COLUMN_OF_INDEX[name]!;
    const wanted = [...new Set(keys)].filter(Boolean);
    if (wanted.length === 0) return [];
    const params: unknown[] = [wanted];
    let sql = SELECT_INDEXED + `WHERE ${column} = ANY($1) AND NOT deleted`;
    if (account !== undefined) {
      params.push(account);
      sql += ' AND account = $2';
    }
    const rows = await this.query(sql + ' ORDER BY account, grp, kind_lc, namespace, name', params);
    return rows.map(toIndexed);
  }

  async indexPairs(outer: string, inner: string, outerKey?: string): Promise<IndexPair[]> {
    this.registry.require(outer);
    this.registry.require(inner);
    const o = COLUMN_OF_INDEX[outer]!;
    const i = COLUMN_OF_INDEX[inner]!;
    // Tombstones carry no keys, so the keys alone answer.
    const rows = await this.query(
      `SELECT DISTINCT ${o} AS o, account, ${i} AS i FROM sa_objects WHERE ` +
        (outerKey === undefined ? `${o} <> ''` : `${o} = $1`) +
        ` AND ${i} <> '' ORDER BY o, account, i`,
      outerKey === undefined ? [] : [outerKey],
    );
    return rows.map((r) => ({ outer: r.o as string, account: r.account as string, inner: r.i as string }));
  }

  async resumePoints(account: string): Promise<ResumePointRecord[]> {
    try {
      await this.loadScopes(this.pool, account, true);
    } catch (e) {
      throw this.failed(e);
    }
    return this.scopes.resumePoints(account);
  }

  async counts(): Promise<KindCount[]> {
    const rows = await this.query(
      'SELECT account, grp, MIN(kind) AS kind, COUNT(*) AS n FROM sa_objects WHERE NOT deleted ' +
        'GROUP BY account, grp, kind_lc',
      [],
    );
    return rows.map((r) => ({
      account: r.account as string,
      group: r.grp as string,
      kind: r.kind as string,
      count: Number(r.n),
    }));
  }

  async saveAccount(record: AccountRecord): Promise<void> {
    await this.controlQuery(
      'INSERT INTO sa_accounts (name, record, updated_at) VALUES ($1, $2, $3) ' +
        'ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record, updated_at = EXCLUDED.updated_at',
      [record.name, JSON.stringify(record), Date.now()],
    );
  }

  async listAccounts(): Promise<AccountRecord[]> {
    const rows = await this.controlQuery('SELECT record FROM sa_accounts ORDER BY name', []);
    return rows.map((r) => normalizeAccountRecord(JSON.parse(r.record as string) as AccountRecord));
  }

  async dropAccount(name: string): Promise<void> {
    // In slices, so dropping a big account does not hold one huge transaction.
    for (;;) {
      const rows = await this.query(
        'DELETE FROM sa_objects WHERE ctid = ANY(ARRAY(SELECT ctid FROM sa_objects WHERE account = $1 LIMIT 5000)) ' +
          'RETURNING 1',
        [name],
      );
      if (rows.length === 0) break;
    }
    await this.query('DELETE FROM sa_sync_state WHERE account = $1', [name]);
    await this.query('DELETE FROM sa_accounts WHERE name = $1', [name]);
    await this.query('DELETE FROM sa_account_leases WHERE account = $1', [name]);
    this.reloadAccountState(name);
  }

  /**
   * Runs `step` in a transaction holding the account's lease row (created released when the account has none, so
   * two claimants of a new account queue on it too), with the database's clock read once the row is locked; a
   * deadlock victim runs again.
   */
  private async withLease<T>(
    account: string,
    step: (client: pg.PoolClient, lease: AccountLease | undefined, now: number) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await inTransaction(this.control, async (client) => {
          // A second claimant's INSERT waits for the first's to commit, then does nothing; the SELECT then locks.
          await client.query(
            `INSERT INTO sa_account_leases (${LEASE_COLUMNS}) VALUES ($1, '', '', '', '', 'ACTIVE', 0, 1, 0, 0, FALSE, '') ` +
              'ON CONFLICT (account) DO NOTHING',
            [account],
          );
          const { rows } = await client.query<SqlRow>(
            `WITH l AS MATERIALIZED (SELECT ${LEASE_COLUMNS} FROM sa_account_leases WHERE account = $1 FOR UPDATE) ` +
              `SELECT l.*, ${DB_CLOCK_NOW} AS now_ms FROM l`,
            [account],
          );
          const row = rows[0];
          const lease = row && row.replica !== '' ? toLease(row) : undefined;
          return step(client, lease, Number(row?.now_ms));
        });
      } catch (e) {
        if (attempt < DEADLOCK_ATTEMPTS && isDeadlock(e)) {
          await sleep(5 + Math.random() * 20 * attempt);
          continue;
        }
        throw e instanceof ScaleAgentError ? e : this.failed(e);
      }
    }
  }

  /** Writes `next` over the lease read as `read` (its generation), or fails: the compare-and-set of ownership.ts. */
  private async writeLease(client: pg.PoolClient, next: AccountLease, read: AccountLease | undefined): Promise<void> {
    const res = await client.query(
      'UPDATE sa_account_leases SET replica = $1, replica_url = $2, session_id = $3, agent_id = $4, state = $5, ' +
        'expires_at = $6, released_at = $7, generation = $8, failed_at = $9, share_load = $10, handoff_to = $11 ' +
        'WHERE account = $12 AND generation = $13',
      [
        next.replica,
        next.replicaUrl,
        next.sessionId,
        next.agentId,
        next.state,
        next.expiresAt,
        next.releasedAt,
        next.generation,
        next.failedAt,
        next.shareLoad,
        next.handoffTo,
        next.account,
        read?.generation ?? 0,
      ],
    );
    if (res.rowCount !== 1) {
      throw new ScaleAgentError('CONFLICT', `lease of account ${next.account} changed under its row lock`);
    }
  }

  async claimAccount(claim: LeaseClaim, record: AccountRecord): Promise<ClaimOutcome> {
    return this.withLease(claim.account, async (client, lease, now) => {
      const { rows } = await client.query<SqlRow>('SELECT record FROM sa_accounts WHERE name = $1 FOR UPDATE', [
        claim.account,
      ]);
      const stored = rows[0]
        ? normalizeAccountRecord(JSON.parse(rows[0].record as string) as AccountRecord)
        : undefined;
      const outcome = decideClaim(claim, { record: stored, lease }, now);
      if (!outcome.granted) {
        // The handoff request keeps the generation: the holder's fence is unchanged.
        if (outcome.code === 'standby' && outcome.handoff) await this.writeLease(client, outcome.handoff, lease);
        return outcome;
      }
      await this.writeLease(client, outcome.lease, lease ?? { ...outcome.lease, generation: 0 });
      await client.query(
        'INSERT INTO sa_accounts (name, record, updated_at) VALUES ($1, $2, $3) ' +
          'ON CONFLICT (name) DO UPDATE SET record = EXCLUDED.record, updated_at = EXCLUDED.updated_at',
        [record.name, JSON.stringify(record), now],
      );
      return outcome;
    });
  }

  async reportAccountState(account: string, holder: LeaseHolder, state: 'ACTIVE' | 'FAILED'): Promise<boolean> {
    return this.withLease(account, async (client, lease, now) => {
      const next = reportState(lease, holder, state, now);
      if (next) await this.writeLease(client, next, lease);
      return next !== undefined;
    });
  }

  async dropHeldAccount(name: string, holder: LeaseHolder): Promise<boolean> {
    const held = await this.withLease(name, async (_client, lease, now) => heldBy(lease, holder, now));
    if (!held) return false;
    // The objects in slices (dropAccount): the lease goes last, so a peer finds the account held until then.
    await this.dropAccount(name);
    return true;
  }

  async releaseAccounts(replica: string, sessionId: string, accounts: readonly string[]): Promise<void> {
    if (accounts.length === 0) return;
    await this.controlQuery(
      `UPDATE sa_account_leases SET released_at = ${DB_NOW} ` +
        'WHERE replica = $1 AND session_id = $2 AND released_at = 0 AND account = ANY($3)',
      [replica, sessionId, accounts],
    );
  }

  async renewLeases(replica: string, leaseMs: number): Promise<AccountLease[]> {
    // Bounded well within the lease, so a renewal that cannot complete is known to have failed while it still runs.
    const timeoutMs = Math.max(500, leaseMs / 3);
    // Live leases only (ownership.ts renew): one that expired may already be a peer's to take. One statement
    // renews and returns them.
    const rows = await this.controlQuery(
      `UPDATE sa_account_leases SET expires_at = ${DB_NOW} + $1 WHERE replica = $2 AND released_at = 0 ` +
        `AND expires_at > ${DB_NOW} RETURNING ${LEASE_COLUMNS}`,
      [leaseMs, replica],
      timeoutMs,
    );
    return rows.map(toLease);
  }

  async publishReplicaView(v: Omit<ReplicaView, 'expiresAt'>, ttlMs: number, pruneAfterMs: number): Promise<void> {
    await this.controlQuery(
      'INSERT INTO sa_replica_views (replica, replica_url, view_json, expires_at) ' +
        `VALUES ($1, $2, $3, ${DB_NOW} + $4) ON CONFLICT (replica) DO UPDATE SET ` +
        'replica_url = EXCLUDED.replica_url, view_json = EXCLUDED.view_json, expires_at = EXCLUDED.expires_at',
      [v.replica, v.replicaUrl, v.json, ttlMs],
    );
    // Replica ids are per process: views of replicas gone long ago would otherwise stay forever.
    await this.controlQuery(`DELETE FROM sa_replica_views WHERE expires_at < ${DB_NOW} - $1`, [pruneAfterMs]);
  }

  async listReplicaViews(): Promise<{ now: number; views: ReplicaView[] }> {
    const rows = await this.controlQuery(
      `SELECT replica, replica_url, view_json, expires_at, ${DB_NOW} AS now_ms FROM sa_replica_views ` +
        `WHERE expires_at > ${DB_NOW} ORDER BY replica`,
      [],
    );
    const views = rows.map((r) => ({
      replica: r.replica as string,
      replicaUrl: r.replica_url as string,
      json: r.view_json as string,
      expiresAt: Number(r.expires_at),
    }));
    // No row: the clock is not needed (nothing to expire).
    return { now: rows.length > 0 ? Number(rows[0]!.now_ms) : 0, views };
  }

  async dropReplicaView(replica: string): Promise<void> {
    await this.controlQuery('DELETE FROM sa_replica_views WHERE replica = $1', [replica]);
  }

  async listLeases(): Promise<{ now: number; leases: AccountLease[] }> {
    const [clock, rows] = await Promise.all([
      this.controlQuery(`SELECT ${DB_NOW} AS now_ms`, []),
      this.controlQuery(`SELECT ${LEASE_COLUMNS} FROM sa_account_leases WHERE replica <> '' ORDER BY account`, []),
    ]);
    return { now: Number(clock[0]?.now_ms), leases: rows.map(toLease) };
  }

  async dropAccountIfUnheld(name: string, graceMs: number): Promise<boolean> {
    const dropped = await this.withLease(name, async (client, lease, now) => {
      if (!orphanGraceOver(lease, graceMs, now)) return false;
      // One transaction, objects included: a peer taking the account over right after must not see half of them.
      await client.query('DELETE FROM sa_objects WHERE account = $1', [name]);
      await client.query('DELETE FROM sa_sync_state WHERE account = $1', [name]);
      await client.query('DELETE FROM sa_accounts WHERE name = $1', [name]);
      await client.query('DELETE FROM sa_account_leases WHERE account = $1', [name]);
      return true;
    });
    if (dropped) this.reloadAccountState(name);
    return dropped;
  }

  reloadAccountState(name: string): void {
    this.scopes.dropAccount(name);
    this.loadedAccounts.delete(name);
  }

  async ping(): Promise<void> {
    await this.query('SELECT 1', []);
  }

  async close(): Promise<void> {
    await Promise.all([this.pool.end(), this.control.end()]);
  }

  private failed(e: unknown): ScaleAgentError {
    return new ScaleAgentError('UNAVAILABLE', `PostgreSQL store query failed: ${(e as Error).message}`, {
      cause: this.storageFull.noted(e),
    });
  }

  /** A statement on the ownership connections (see `control`). */
  private controlQuery(sql: string, params: unknown[], timeoutMs?: number): Promise<SqlRow[]> {
    return this.query(sql, params, timeoutMs, this.control);
  }

  /**
   * One statement on a pooled connection. A statement given a shorter bound than the session's (lease renewals)
   * gets it as the client's timeout, as on MySQL; pool.query discards the connection of a statement the client gave
   * up on.
   */
  private async query(sql: string, params: unknown[], timeoutMs?: number, pool = this.pool): Promise<SqlRow[]> {
    try {
      if (timeoutMs === undefined || timeoutMs >= QUERY_TIMEOUT_MS) {
        return (await pool.query<SqlRow>(sql, params)).rows;
      }
      const statement: Statement = { text: sql, values: params, query_timeout: timeoutMs };
      return (await pool.query<SqlRow>(statement as pg.QueryConfig)).rows;
    } catch (e) {
      throw this.failed(e);
    }
  }
}
