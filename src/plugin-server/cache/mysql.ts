import { setTimeout as sleep } from 'node:timers/promises';
import type { Pool, PoolConnection, RowDataPacket } from 'mysql2/promise';
import { sqlLiteral } from './mysql-literal.js';
import { createStorePool } from './mysql-pool.js';
import { WriteStatements } from './mysql-write.js';
import { DB_NOW } from './mysql-clock.js';
import { MIGRATION_TIMEOUT_MS, timed } from './mysql-timeout.js';
import { ScopeTable, tombstonesPrunable, type ScopeState } from './scopes.js';
import { ScaleAgentError } from '../../shared/errors.js';
import { parseApiVersion } from '../../shared/proto.js';
import { StorageFullSignal } from '../storage-full.js';
import { AppliedListeners } from './applied-listeners.js';
import { IndexRegistry } from './index-registry.js';
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
} from './sql-rows.js';
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
import {
  normalizeAccountRecord,
  scopeId,
  searchKey,
  type AccountLease,
  type AccountRecord,
  type ApplyStats,
  type CachedObject,
  type IndexDefinition,
  type IndexPair,
  type StoreBackend,
  type AppliedListener,
  type KindCount,
  type ObjectKeyOf,
  type ListFilter,
  type ObjectKey,
  type ReplicaView,
  type ResumePointRecord,
  type ScopeKey,
  type StoreChange,
  type StoreOp,
} from './store.js';

/**
 * Schema migrations, applied in order at startup under a named lock so replicas starting together do not race.
 * Key columns are ASCII/binary: Kubernetes names are ASCII, and a utf8mb4 five-column key would exceed InnoDB's
 * 3072-byte index limit.
 *
 * Replicas of two versions share the database during a rolling upgrade, so a migration must be additive (a new
 * table, a column with a default, an index, a data fill): the previous version keeps running against it, ignoring
 * what it does not know. One that the previous version cannot live with names, in COMPATIBLE_FROM, the oldest
 * schema version whose plugin-server may still run against it; a replica that knows fewer migrations then refuses
 * to start (docs/operations.md#upgrades).
 */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [
    `CREATE TABLE IF NOT EXISTS sa_objects (
      account VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      grp VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      kind_lc VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      namespace VARCHAR(63) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      name VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      upd TINYINT NOT NULL DEFAULT 1,
      sync_gen BIGINT NOT NULL DEFAULT 0,
      kind VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      api_version VARCHAR(300) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      uid VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      deleted TINYINT NOT NULL DEFAULT 0,
      object_json LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NULL,
      updated_at BIGINT NOT NULL,
      resource_version VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      rv_num BIGINT UNSIGNED NULL,
      PRIMARY KEY (account, grp, kind_lc, namespace, name),
      KEY sa_objects_by_kind (account, kind_lc, namespace, name)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    `CREATE TABLE IF NOT EXISTS sa_sync_state (
      account VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      grp VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      kind_lc VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      namespace VARCHAR(63) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      kind VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      version VARCHAR(100) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      gen BIGINT NOT NULL,
      syncing TINYINT NOT NULL,
      synced TINYINT NOT NULL,
      resource_version VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      PRIMARY KEY (account, grp, kind_lc, namespace)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
    `CREATE TABLE IF NOT EXISTS sa_accounts (
      name VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      record LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      updated_at BIGINT NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  // 2: who holds each account (replicas share it). A new table only, so a replica of the previous version running
  // beside this one during a rolling upgrade is unaffected.
  [
    `CREATE TABLE IF NOT EXISTS sa_account_leases (
      account VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      replica VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      replica_url VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      session_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      agent_id VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      state VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      expires_at BIGINT NOT NULL,
      released_at BIGINT NOT NULL,
      KEY sa_account_leases_by_replica (replica)
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  // 3: the application and owner indexes (views/app-index.ts; COLUMN_OF_INDEX). Rows written before have no keys, so every synced
  // scope is marked unsynced: agents relist on their next connect and every object is written again with its keys.
  // The kind index leads with the kind: lookups by account and kind use it as before, and /search and the
  // namespaces of /credentials read one kind of every account from it alone (it covers their columns).
  [
    `ALTER TABLE sa_objects
      ADD COLUMN app VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
      ADD COLUMN cluster VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT '',
      ADD COLUMN owner_uid VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
      ADD KEY sa_objects_by_app (app, account, cluster),
      ADD KEY sa_objects_by_owner (account, owner_uid),
      DROP KEY sa_objects_by_kind,
      ADD KEY sa_objects_by_kind (kind_lc, deleted, account, namespace, name)`,
    'UPDATE sa_sync_state SET synced = 0',
  ],
  // 4: account records carry permissions, onlySpinnakerManaged and cacheAllApplicationRelationships. The record is
  // one JSON document, so this only writes the defaults into records stored before (JSON_MERGE_PATCH keeps a
  // record's own values over the defaults); listAccounts fills them in too, for records a replica of the previous
  // version writes during a rolling upgrade.
  [
    `UPDATE sa_accounts SET record = JSON_MERGE_PATCH(
      '{"permissions":{"READ":[],"WRITE":[]},"onlySpinnakerManaged":false,"cacheAllApplicationRelationships":false}',
      record)
    WHERE JSON_VALID(record)`,
  ],
  // 5: what each replica's agents and held accounts look like (replica-views.ts), so every replica's admin API
  // answers for all of them. A new table only, like 2.
  [
    `CREATE TABLE IF NOT EXISTS sa_replica_views (
      replica VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
      replica_url VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
      view_json LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
      expires_at BIGINT NOT NULL
    ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`,
  ],
  // 6: each applied migration records the oldest schema version whose plugin-server may run against it.
  ['ALTER TABLE sa_schema_migrations ADD COLUMN compatible_from INT NOT NULL DEFAULT 0'],
  // 7: the ownership protocol's fencing token and FAILED-since time (ownership.ts); lease times are from here on the
  // database's clock. Columns with defaults: a replica of the previous version keeps writing leases without them
  // (unconditionally, as it did) during a rolling upgrade.
  [
    `ALTER TABLE sa_account_leases
      ADD COLUMN generation BIGINT NOT NULL DEFAULT 0,
      ADD COLUMN failed_at BIGINT NOT NULL DEFAULT 0`,
  ],
  // 8: load-sharing agent replicas (ownership.ts decideClaim): whether the holder shares load, and the agent a
  // handoff was asked for. Columns with defaults: a replica of the previous version never asks for a handoff, and a
  // handoff_to it leaves behind on a lease it grants names an agent the new holder then hands over to, as asked.
  [
    `ALTER TABLE sa_account_leases
      ADD COLUMN share_load TINYINT NOT NULL DEFAULT 0,
      ADD COLUMN handoff_to VARCHAR(253) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL DEFAULT ''`,
  ],
];

/** The migration (1-based) whose row first carries compatible_from. */
const COMPATIBILITY_COLUMN_SINCE = 6;

/**
 * Migrations the previous versions cannot run against, by number: the oldest schema version still compatible.
 * 3 is one (a replica of version 2 would write objects without their application keys), from before the rule.
 */
export const COMPATIBLE_FROM: Readonly<Record<number, number>> = { 3: 3 };

/** InnoDB's deadlock error, raw from mysql2 (withLease) or as the cause of the store's own error (apply). */
function isDeadlock(e: unknown): boolean {
  type Coded = { code?: unknown; errno?: unknown; cause?: Coded } | undefined;
  const deadlock = (x: Coded) => x?.code === 'ER_LOCK_DEADLOCK' || x?.errno === 1213;
  return deadlock(e as Coded) || deadlock((e as Coded)?.cause);
}

/**
 * Decides "newer" once per row into the scratch column `upd` (ON DUPLICATE KEY UPDATE assigns left to right, so
 * later assignments see it) and updates the object only then; `sync_gen` is stamped either way, which is the
 * "mark" of mark-and-sweep.
 */
const UPSERT_TAIL = ` ON DUPLICATE KEY UPDATE
  upd = IF(VALUES(rv_num) IS NOT NULL AND rv_num IS NOT NULL, VALUES(rv_num) > rv_num,
           VALUES(resource_version) <> resource_version),
  sync_gen = VALUES(sync_gen),
  kind = IF(upd, VALUES(kind), kind),
  api_version = IF(upd, VALUES(api_version), api_version),
  uid = IF(upd, VALUES(uid), uid),
  deleted = IF(upd, VALUES(deleted), deleted),
  object_json = IF(upd, VALUES(object_json), object_json),
  updated_at = IF(upd, VALUES(updated_at), updated_at),
  resource_version = IF(upd, VALUES(resource_version), resource_version),
  rv_num = IF(upd, VALUES(rv_num), rv_num),
  app = IF(upd, VALUES(app), app),
  cluster = IF(upd, VALUES(cluster), cluster),
  owner_uid = IF(upd, VALUES(owner_uid), owner_uid)`;

const UPSERT_HEAD =
  'INSERT INTO sa_objects (account, grp, kind_lc, namespace, name, upd, sync_gen, kind, api_version, uid, deleted, ' +
  'object_json, updated_at, resource_version, rv_num, app, cluster, owner_uid) VALUES ';

/** MySQL (or MariaDB, or any MySQL-compatible engine) store, shared by plugin-server replicas. */
export class MysqlCacheStore implements StoreBackend {
  readonly type = 'mysql' as const;
  private readonly applied = new AppliedListeners();
  /** Objects: the agents' writes and the reads of the views. */
  private readonly pool: Pool;
  /**
   * Ownership: leases, account records and replica views, on connections of their own. A fleet's initial sync keeps
   * every object connection busy and a queue of writes waiting; the lease renewal queued behind them missed the
   * holder's side of the lease, and the replica closed every stream (store "lost") in the middle of the sync.
   */
  private readonly control: Pool;
  private readonly scopes = new ScopeTable();
  private readonly loadedAccounts = new Set<string>();
  private readonly registry = new IndexRegistry({
    names: Object.keys(COLUMN_OF_INDEX),
    why: `the MySQL store keeps only the indexes ${Object.keys(COLUMN_OF_INDEX).join(', ')} (columns of sa_objects)`,
  });
  /** Whether this process has written: indexes are registered before (rows it wrote would lack their keys). */
  private written = false;

  /** Writes refused for lack of space are noted here (readiness reports them; see storage-full.ts). */
  private readonly storageFull: StorageFullSignal;

  constructor(url: string, options: { connectionLimit?: number; storageFull?: StorageFullSignal } = {}) {
    this.storageFull = options.storageFull ?? new StorageFullSignal();
    this.pool = createStorePool(url, {
      connectionLimit: options.connectionLimit ?? 8,
      bigNumbers: true,
      // A write's statements go as multi-statement packets (mysql-write.ts).
      multipleStatements: true,
    });
    this.control = createStorePool(url, { connectionLimit: CONTROL_CONNECTIONS, bigNumbers: true });
  }

  /**
   * Whether writes run at READ COMMITTED. At the default REPEATABLE READ, a resync's sweep (a range DELETE) and every
   * upsert lock the gap up to the next row, which belongs to the next kind or the next account: syncs of different
   * accounts then deadlock on each other's gaps, the more the more agents sync at once (a fleet reconnecting after a
   * restart). Each account has one writer, and a write's reads are by primary key or of rows it owns, so it needs
   * no gap locks. Only a binary log in STATEMENT format refuses READ COMMITTED writes; there the default stays, with
   * more deadlocks (each retried, see apply()).
   */
  private readCommitted = false;

  async init(): Promise<void> {
    const conn = await this.connection();
    try {
      const [binlog] = await conn.query<RowDataPacket[]>(timed('SELECT @@log_bin AS on_, @@binlog_format AS format'));
      this.readCommitted = !(Number(binlog[0]?.on_) === 1 && String(binlog[0]?.format).toUpperCase() === 'STATEMENT');
      await conn.query(timed("SELECT GET_LOCK('scale_agent_migrations', 60)", MIGRATION_TIMEOUT_MS));
      await conn.query(
        timed(
          'CREATE TABLE IF NOT EXISTS sa_schema_migrations (version INT NOT NULL PRIMARY KEY, applied_at BIGINT NOT NULL)',
        ),
      );
      const [rows] = await conn.query<RowDataPacket[]>(
        timed('SELECT COALESCE(MAX(version), 0) AS v FROM sa_schema_migrations'),
      );
      const current = Number(rows[0]?.v ?? 0);
      if (current > MIGRATIONS.length) {
        // A newer replica migrated it (a rolling upgrade under way): run beside it unless its migrations forbid.
        const [req] = await conn.query<RowDataPacket[]>(
          timed('SELECT COALESCE(MAX(compatible_from), 0) AS r FROM sa_schema_migrations'),
        );
        const verdict = schemaCompatibility(MIGRATIONS.length, current, Number(req[0]?.r ?? 0));
        if (!verdict.ok) throw new ScaleAgentError('CONFLICT', verdict.message);
      }
      for (let i = current; i < MIGRATIONS.length; i++) {
        const version = i + 1;
        for (const sql of MIGRATIONS[i] ?? []) await conn.query(timed(sql, MIGRATION_TIMEOUT_MS));
        if (version >= COMPATIBILITY_COLUMN_SINCE) {
          await conn.query(
            timed('INSERT INTO sa_schema_migrations (version, applied_at, compatible_from) VALUES (?, ?, ?)'),
            [version, Date.now(), COMPATIBLE_FROM[version] ?? 0],
          );
        } else {
          await conn.query(timed('INSERT INTO sa_schema_migrations (version, applied_at) VALUES (?, ?)'), [
            version,
            Date.now(),
          ]);
        }
      }
    } finally {
      await conn.query(timed("SELECT RELEASE_LOCK('scale_agent_migrations')")).catch(() => undefined);
      conn.release();
    }
  }

  private async connection(pool: Pool = this.pool): Promise<PoolConnection> {
    try {
      return await pool.getConnection();
    } catch (e) {
      throw new ScaleAgentError('UNAVAILABLE', `MySQL store unreachable: ${(e as Error).message}`, { cause: e });
    }
  }

  private async loadScopes(conn: PoolConnection, account: string, force = false): Promise<void> {
    if (this.loadedAccounts.has(account) && !force) return;
    const [rows] = await conn.query<RowDataPacket[]>(
      timed(
        'SELECT grp, kind, namespace, version, gen, syncing, synced, resource_version FROM sa_sync_state WHERE account = ?',
      ),
      [account],
    );
    this.scopes.dropAccount(account);
    for (const r of rows) {
      const key: ScopeKey = {
        account,
        group: r.grp as string,
        kind: r.kind as string,
        namespace: r.namespace as string,
      };
      this.scopes.set({
        key,
        version: r.version as string,
        gen: Number(r.gen),
        syncing: Number(r.syncing) === 1,
        synced: Number(r.synced) === 1,
        resourceVersion: r.resource_version as string,
      });
    }
    this.loadedAccounts.add(account);
  }

  /**
   * Applies ops in one transaction. InnoDB picks a victim when transactions of several agents' streams (or
   * replicas) wait on each other's row and gap locks; the victim is rolled back whole, so it is run again (its scope
   * states were dropped with the rollback and are reloaded), a few times, after a short random pause.
   */
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

  /** Transactions run again after InnoDB chose them as a deadlock victim (for tests and diagnostics). */
  deadlockRetries = 0;

  private async applyOnce(ops: readonly StoreOp[], fence: WriteFence | undefined): Promise<ApplyStats> {
    const stats: ApplyStats = { applied: 0, skipped: 0, swept: 0, pruned: 0 };
    if (ops.length === 0) return stats;
    const accounts = new Set(ops.map((o) => (o.op === 'change' ? o.change.account : o.scope.account)));
    const conn = await this.connection();
    const dirty = new Map<string, ScopeState>();
    try {
      for (const a of accounts) await this.loadScopes(conn, a);
      const write = new WriteStatements();
      const now = Date.now();
      let rows: string[] = [];
      let bytes = 0;
      const rowsDone = (): void => {
        if (rows.length === 0) return;
        write.add(UPSERT_HEAD + rows.join(',') + UPSERT_TAIL);
        stats.applied += rows.length;
        rows = [];
        bytes = 0;
      };
      for (const op of ops) {
        if (op.op === 'change') {
          rows.push(this.changeRow(op.change, now, dirty));
          bytes += op.change.json.length + 200;
          if (rows.length >= MAX_ROWS_PER_STATEMENT || bytes >= MAX_BYTES_PER_STATEMENT) rowsDone();
          continue;
        }
        rowsDone();
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
            write.add(`DELETE FROM sa_objects WHERE ${scopeWhere(s.key)} AND sync_gen < ${s.gen}`, 'swept');
            s.syncing = false;
            s.synced = true;
          }
          if (op.version) s.version = op.version;
          s.resourceVersion = op.resourceVersion;
          dirty.set(scopeId(s.key), s);
          this.pruneTombstones(write, s);
        } else {
          const s = this.scopes.get(op.scope);
          if (s && s.synced && !s.syncing) {
            s.resourceVersion = maxResourceVersion(s.resourceVersion, op.resourceVersion);
            dirty.set(scopeId(s.key), s);
            this.pruneTombstones(write, s);
          }
        }
      }
      rowsDone();
      for (const s of dirty.values()) write.add(syncStateUpsert(s));
      const fenced = fence !== undefined && fence.generations.size > 0;
      if (fenced) write.add(fenceSelect(fence), 'fence');
      const results = await write.run(conn, this.readCommitted, !fenced);
      stats.swept = results.swept;
      stats.pruned = results.pruned;
      if (fenced) {
        const leases = new Map(results.fenceRows.map((r) => [r.account as string, toLease(r)]));
        const lost = fencedOut(fence, (a) => leases.get(a), Number(results.fenceRows[0]?.now_ms ?? 0));
        if (lost.length > 0) throw new LeaseLost(lost);
        await conn.commit();
      }
      return stats;
    } catch (e) {
      await conn.rollback().catch(() => undefined);
      // The in-memory scope states may be ahead of what was rolled back; reload them on next use.
      for (const a of accounts) this.loadedAccounts.delete(a);
      if (e instanceof LeaseLost) throw e;
      throw new ScaleAgentError('UNAVAILABLE', `MySQL store write failed: ${(e as Error).message}`, {
        cause: this.storageFull.noted(e),
      });
    } finally {
      conn.release();
    }
  }

  /**
   * Drops the scope's tombstones at or below its resume point (store.ts says why they are no longer needed). The
   * kind index leads with (kind_lc, deleted, account), so only tombstones are read. Non-integer resourceVersions
   * have no rv_num and are kept.
   */
  private pruneTombstones(write: WriteStatements, s: ScopeState): void {
    const rv = rvNumber(s.resourceVersion);
    if (rv === null || !tombstonesPrunable(s, this.scopes)) return;
    const k = s.key;
    let where = `kind_lc = ${sqlLiteral(k.kind.toLowerCase())} AND deleted = 1 AND account = ${sqlLiteral(k.account)}`;
    if (k.namespace) where += ` AND namespace = ${sqlLiteral(k.namespace)}`;
    write.add(
      `DELETE FROM sa_objects WHERE ${where} AND grp = ${sqlLiteral(k.group)} AND rv_num <= CAST(${sqlLiteral(rv)} AS UNSIGNED)`,
      'pruned',
    );
  }

  /** The row's text for the upsert's VALUES: its 18 columns (upd is the literal 1), as SQL literals. */
  private changeRow(c: StoreChange, now: number, dirty: Map<string, ScopeState>): string {
    const { group } = parseApiVersion(c.apiVersion);
    const s = this.scopes.of(c.account, group, c.kind, c.namespace);
    if (s && s.synced && !s.syncing) {
      s.resourceVersion = maxResourceVersion(s.resourceVersion, c.resourceVersion);
      dirty.set(scopeId(s.key), s);
    }
    const deleted = c.type === 'DELETED';
    return (
      `(${sqlLiteral(c.account)},${sqlLiteral(group)},${sqlLiteral(c.kind.toLowerCase())},` +
      `${sqlLiteral(c.namespace)},${sqlLiteral(c.name)},1,${s?.gen ?? 0},${sqlLiteral(c.kind)},` +
      `${sqlLiteral(c.apiVersion)},${sqlLiteral(c.uid)},${deleted ? 1 : 0},${deleted ? 'NULL' : sqlLiteral(c.json)},` +
      `${now},${sqlLiteral(c.resourceVersion)},${sqlLiteral(rvNumber(c.resourceVersion))},` +
      `${deleted ? "''" : sqlLiteral(c.index?.application ?? '')},${deleted ? "''" : sqlLiteral(c.index?.cluster ?? '')},` +
      `${deleted ? "''" : sqlLiteral(c.index?.owner ?? '')})`
    );
  }

  async get(key: ObjectKey): Promise<CachedObject | undefined> {
    const params: unknown[] = [key.account, key.kind.toLowerCase(), key.namespace, key.name];
    let sql = SELECT_OBJECT + 'WHERE account = ? AND kind_lc = ? AND namespace = ? AND name = ? AND deleted = 0';
    if (key.group !== undefined) {
      sql += ' AND grp = ?';
      params.push(key.group);
    }
    const [rows] = await this.query(sql + ' ORDER BY grp LIMIT 1', params);
    return rows[0] ? toCached(rows[0]) : undefined;
  }

  async list(filter: ListFilter): Promise<CachedObject[]> {
    const params: unknown[] = [filter.account];
    let sql = SELECT_OBJECT + 'WHERE account = ? AND deleted = 0';
    if (filter.group !== undefined) {
      sql += ' AND grp = ?';
      params.push(filter.group);
    }
    if (filter.kind !== undefined) {
      sql += ' AND kind_lc = ?';
      params.push(filter.kind.toLowerCase());
    }
    if (filter.namespace !== undefined) {
      sql += ' AND namespace = ?';
      params.push(filter.namespace);
    }
    const [rows] = await this.query(sql + ' ORDER BY grp, kind_lc, namespace, name', params);
    return rows.map(toCached);
  }

  async searchKeys(
    kind: { group: string | undefined; kind: string },
    kindName: string,
    text: string,
  ): Promise<ObjectKeyOf[]> {
    const params: unknown[] = [kind.kind.toLowerCase()];
    let sql = 'SELECT account, grp, namespace, name FROM sa_objects WHERE kind_lc = ? AND deleted = 0';
    if (kind.group !== undefined) {
      sql += ' AND grp = ?';
      params.push(kind.group);
    }
    if (text) {
      // Binary: Clouddriver's match is case-sensitive on the key (the query is lower-cased by the caller).
      sql += " AND INSTR(BINARY CONCAT(?, account, ':', namespace, ':', name), BINARY ?) > 0";
      params.push(searchKey(kindName, '', '', '').slice(0, -2), text);
    }
    const [rows] = await this.query(sql + ' ORDER BY account, namespace, name', params);
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
    let sql = SELECT_INDEXED + `WHERE ${column} IN (?) AND deleted = 0`;
    if (account !== undefined) {
      sql += ' AND account = ?';
      params.push(account);
    }
    const [rows] = await this.query(sql + ' ORDER BY account, grp, kind_lc, namespace, name', params);
    return rows.map(toIndexed);
  }

  async indexPairs(outer: string, inner: string, outerKey?: string): Promise<IndexPair[]> {
    this.registry.require(outer);
    this.registry.require(inner);
    const o = COLUMN_OF_INDEX[outer]!;
    const i = COLUMN_OF_INDEX[inner]!;
    // Tombstones carry no keys, so the index alone answers (no row is read).
    const [rows] = await this.query(
      `SELECT DISTINCT ${o} AS o, account, ${i} AS i FROM sa_objects WHERE ` +
        (outerKey === undefined ? `${o} <> ''` : `${o} = ?`) +
        ` AND ${i} <> '' ORDER BY o, account, i`,
      outerKey === undefined ? [] : [outerKey],
    );
    return rows.map((r) => ({ outer: r.o as string, account: r.account as string, inner: r.i as string }));
  }

  async resumePoints(account: string): Promise<ResumePointRecord[]> {
    const conn = await this.connection();
    try {
      await this.loadScopes(conn, account, true);
    } finally {
      conn.release();
    }
    return this.scopes.resumePoints(account);
  }

  async counts(): Promise<KindCount[]> {
    const [rows] = await this.query(
      'SELECT account, grp, MIN(kind) AS kind, COUNT(*) AS n FROM sa_objects WHERE deleted = 0 GROUP BY account, grp, kind_lc',
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
      'INSERT INTO sa_accounts (name, record, updated_at) VALUES (?, ?, ?) ' +
        'ON DUPLICATE KEY UPDATE record = VALUES(record), updated_at = VALUES(updated_at)',
      [record.name, JSON.stringify(record), Date.now()],
    );
  }

  async listAccounts(): Promise<AccountRecord[]> {
    const [rows] = await this.controlQuery('SELECT record FROM sa_accounts ORDER BY name', []);
    return rows.map((r) => normalizeAccountRecord(JSON.parse(r.record as string) as AccountRecord));
  }

  async dropAccount(name: string): Promise<void> {
    // In slices, so dropping a big account does not hold one huge transaction.
    for (;;) {
      const [res] = await this.pool.query(timed('DELETE FROM sa_objects WHERE account = ? LIMIT 5000'), [name]);
      if ((res as { affectedRows: number }).affectedRows === 0) break;
    }
    await this.pool.query(timed('DELETE FROM sa_sync_state WHERE account = ?'), [name]);
    await this.pool.query(timed('DELETE FROM sa_accounts WHERE name = ?'), [name]);
    await this.pool.query(timed('DELETE FROM sa_account_leases WHERE account = ?'), [name]);
    this.reloadAccountState(name);
  }

  /**
   * Runs `step` in a transaction holding the account's lease row (created released when the account has none, so
   * two claimants of a new account queue on it too), with the database's clock; a deadlock victim runs again.
   */
  private async withLease<T>(
    account: string,
    step: (conn: PoolConnection, lease: AccountLease | undefined, now: number) => Promise<T>,
  ): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const conn = await this.connection(this.control);
      try {
        await conn.beginTransaction();
        // ON DUPLICATE KEY UPDATE takes the row's exclusive lock at once (INSERT IGNORE would take a shared one, and
        // two claimants upgrading theirs deadlock).
        await conn.query(
          timed(
            `INSERT INTO sa_account_leases (${LEASE_COLUMNS}) VALUES (?, '', '', '', '', 'ACTIVE', 0, 1, 0, 0, 0, '') ` +
              'ON DUPLICATE KEY UPDATE generation = generation',
          ),
          [account],
        );
        const [rows] = await conn.query<RowDataPacket[]>(
          timed(`SELECT ${LEASE_COLUMNS}, ${DB_NOW} AS now_ms FROM sa_account_leases WHERE account = ? FOR UPDATE`),
          [account],
        );
        const row = rows[0];
        const lease = row && row.replica !== '' ? toLease(row) : undefined;
        const result = await step(conn, lease, Number(row?.now_ms));
        await conn.commit();
        return result;
      } catch (e) {
        await conn.rollback().catch(() => undefined);
        if (attempt < DEADLOCK_ATTEMPTS && isDeadlock(e)) {
          await sleep(5 + Math.random() * 20 * attempt);
          continue;
        }
        throw e instanceof ScaleAgentError
          ? e
          : new ScaleAgentError('UNAVAILABLE', `MySQL store query failed: ${(e as Error).message}`, {
              cause: this.storageFull.noted(e),
            });
      } finally {
        conn.release();
      }
    }
  }

  /** Writes `next` over the lease read as `read` (its generation), or fails: the compare-and-set of ownership.ts. */
  private async writeLease(conn: PoolConnection, next: AccountLease, read: AccountLease | undefined): Promise<void> {
    const [res] = await conn.query(
      timed(
        'UPDATE sa_account_leases SET replica = ?, replica_url = ?, session_id = ?, agent_id = ?, state = ?, ' +
          'expires_at = ?, released_at = ?, generation = ?, failed_at = ?, share_load = ?, handoff_to = ? ' +
          'WHERE account = ? AND generation = ?',
      ),
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
        next.shareLoad ? 1 : 0,
        next.handoffTo,
        next.account,
        read?.generation ?? 0,
      ],
    );
    if ((res as { affectedRows: number }).affectedRows !== 1) {
      throw new ScaleAgentError('CONFLICT', `lease of account ${next.account} changed under its row lock`);
    }
  }

  async claimAccount(claim: LeaseClaim, record: AccountRecord): Promise<ClaimOutcome> {
    return this.withLease(claim.account, async (conn, lease, now) => {
      const [rows] = await conn.query<RowDataPacket[]>(
        timed('SELECT record FROM sa_accounts WHERE name = ? FOR UPDATE'),
        [claim.account],
      );
      const stored = rows[0]
        ? normalizeAccountRecord(JSON.parse(rows[0].record as string) as AccountRecord)
        : undefined;
      const outcome = decideClaim(claim, { record: stored, lease }, now);
      if (!outcome.granted) {
        // The handoff request keeps the generation: the holder's fence is unchanged.
        if (outcome.code === 'standby' && outcome.handoff) await this.writeLease(conn, outcome.handoff, lease);
        return outcome;
      }
      await this.writeLease(conn, outcome.lease, lease ?? { ...outcome.lease, generation: 0 });
      await conn.query(
        timed(
          'INSERT INTO sa_accounts (name, record, updated_at) VALUES (?, ?, ?) ' +
            'ON DUPLICATE KEY UPDATE record = VALUES(record), updated_at = VALUES(updated_at)',
        ),
        [record.name, JSON.stringify(record), now],
      );
      return outcome;
    });
  }

  async reportAccountState(account: string, holder: LeaseHolder, state: 'ACTIVE' | 'FAILED'): Promise<boolean> {
    return this.withLease(account, async (conn, lease, now) => {
      const next = reportState(lease, holder, state, now);
      if (next) await this.writeLease(conn, next, lease);
      return next !== undefined;
    });
  }

  async dropHeldAccount(name: string, holder: LeaseHolder): Promise<boolean> {
    const held = await this.withLease(name, async (_conn, lease, now) => heldBy(lease, holder, now));
    if (!held) return false;
    // The objects in slices (dropAccount): the lease goes last, so a peer finds the account held until then.
    await this.dropAccount(name);
    return true;
  }

  async releaseAccounts(replica: string, sessionId: string, accounts: readonly string[]): Promise<void> {
    if (accounts.length === 0) return;
    await this.controlQuery(
      `UPDATE sa_account_leases SET released_at = ${DB_NOW} ` +
        'WHERE replica = ? AND session_id = ? AND released_at = 0 AND account IN (?)',
      [replica, sessionId, accounts],
    );
  }

  async renewLeases(replica: string, leaseMs: number): Promise<AccountLease[]> {
    // Bounded well within the lease, so a renewal that cannot complete is known to have failed while it still runs.
    const timeoutMs = Math.max(500, leaseMs / 3);
    // Live leases only (ownership.ts renew): one that expired may already be a peer's to take.
    await this.controlQuery(
      `UPDATE sa_account_leases SET expires_at = ${DB_NOW} + ? WHERE replica = ? AND released_at = 0 ` +
        `AND expires_at > ${DB_NOW}`,
      [leaseMs, replica],
      timeoutMs,
    );
    const [rows] = await this.controlQuery(
      `SELECT ${LEASE_COLUMNS} FROM sa_account_leases WHERE replica = ? AND released_at = 0 AND expires_at > ${DB_NOW}`,
      [replica],
      timeoutMs,
    );
    return rows.map(toLease);
  }

  async publishReplicaView(v: Omit<ReplicaView, 'expiresAt'>, ttlMs: number, pruneAfterMs: number): Promise<void> {
    await this.controlQuery(
      `INSERT INTO sa_replica_views (replica, replica_url, view_json, expires_at) VALUES (?, ?, ?, ${DB_NOW} + ?) ` +
        'ON DUPLICATE KEY UPDATE replica_url = VALUES(replica_url), view_json = VALUES(view_json), ' +
        'expires_at = VALUES(expires_at)',
      [v.replica, v.replicaUrl, v.json, ttlMs],
    );
    // Replica ids are per process: views of replicas gone long ago would otherwise stay forever.
    await this.controlQuery(`DELETE FROM sa_replica_views WHERE expires_at < ${DB_NOW} - ?`, [pruneAfterMs]);
  }

  async listReplicaViews(): Promise<{ now: number; views: ReplicaView[] }> {
    const [rows] = await this.controlQuery(
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
    await this.controlQuery('DELETE FROM sa_replica_views WHERE replica = ?', [replica]);
  }

  async listLeases(): Promise<{ now: number; leases: AccountLease[] }> {
    const [[clock], [rows]] = await Promise.all([
      this.controlQuery(`SELECT ${DB_NOW} AS now_ms`, []),
      this.controlQuery(`SELECT ${LEASE_COLUMNS} FROM sa_account_leases WHERE replica <> '' ORDER BY account`, []),
    ]);
    return { now: Number(clock[0]?.now_ms), leases: rows.map(toLease) };
  }

  async dropAccountIfUnheld(name: string, graceMs: number): Promise<boolean> {
    const dropped = await this.withLease(name, async (conn, lease, now) => {
      if (!orphanGraceOver(lease, graceMs, now)) return false;
      // One transaction, objects included: a peer taking the account over right after must not see half of them.
      await conn.query(timed('DELETE FROM sa_objects WHERE account = ?'), [name]);
      await conn.query(timed('DELETE FROM sa_sync_state WHERE account = ?'), [name]);
      await conn.query(timed('DELETE FROM sa_accounts WHERE name = ?'), [name]);
      await conn.query(timed('DELETE FROM sa_account_leases WHERE account = ?'), [name]);
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

  /** A statement on the ownership connections (see `control`). */
  private controlQuery(sql: string, params: unknown[], timeoutMs?: number): Promise<[RowDataPacket[]]> {
    return this.query(sql, params, timeoutMs, this.control);
  }

  private async query(
    sql: string,
    params: unknown[],
    timeoutMs?: number,
    pool = this.pool,
  ): Promise<[RowDataPacket[]]> {
    try {
      const [rows] = await pool.query<RowDataPacket[]>(timed(sql, timeoutMs), params);
      return [rows];
    } catch (e) {
      throw new ScaleAgentError('UNAVAILABLE', `MySQL store query failed: ${(e as Error).message}`, {
        cause: this.storageFull.noted(e),
      });
    }
  }
}

/** The rows of one scope (its kind in its group, and its namespace unless it watches all of them). */
function scopeWhere(k: ScopeKey): string {
  let where =
    `account = ${sqlLiteral(k.account)} AND grp = ${sqlLiteral(k.group)} ` +
    `AND kind_lc = ${sqlLiteral(k.kind.toLowerCase())}`;
  if (k.namespace) where += ` AND namespace = ${sqlLiteral(k.namespace)}`;
  return where;
}

/** The scope's state as the write leaves it (its resume point among them). */
function syncStateUpsert(s: ScopeState): string {
  const k = s.key;
  const values = [
    k.account,
    k.group,
    k.kind.toLowerCase(),
    k.namespace,
    k.kind,
    s.version,
    s.gen,
    s.syncing ? 1 : 0,
    s.synced ? 1 : 0,
    s.resourceVersion,
  ].map(sqlLiteral);
  return (
    'INSERT INTO sa_sync_state (account, grp, kind_lc, namespace, kind, version, gen, syncing, synced, resource_version) ' +
    `VALUES (${values.join(',')}) ON DUPLICATE KEY UPDATE kind = VALUES(kind), version = VALUES(version), ` +
    'gen = VALUES(gen), syncing = VALUES(syncing), synced = VALUES(synced), resource_version = VALUES(resource_version)'
  );
}

/**
 * The write's fence (ownership.ts fencedOut), at the database's clock, as the transaction's last statement before its
 * commit: the lease rows are share-locked from here to the commit only, so a claim (which locks its row exclusively)
 * has either committed before — and the write is refused — or waits for this commit, after which its new holder's
 * writes come. The caller checks the rows, then commits or rolls back.
 */
function fenceSelect(fence: WriteFence): string {
  const accounts = [...fence.generations.keys()].map(sqlLiteral).join(',');
  return `SELECT ${LEASE_COLUMNS}, ${DB_NOW} AS now_ms FROM sa_account_leases WHERE account IN (${accounts}) LOCK IN SHARE MODE`;
}
