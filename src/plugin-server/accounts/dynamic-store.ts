import type { Pool, PoolConnection, ResultSetHeader, RowDataPacket } from 'mysql2/promise';
import { createStorePool } from '../cache/mysql-pool.js';
import { timed } from '../cache/mysql-timeout.js';
import type { AccountPermissions } from '../../shared/account-options.js';

/** A dynamic account as stored; the kubeconfig contents live apart, sealed (secret-box.ts). */
export interface DynamicDefinition {
  name: string;
  zoneId: string;
  source: 'kubeconfigContents' | 'kubeconfigFile' | 'serviceAccount';
  kubeconfigFile?: string | undefined;
  context?: string | undefined;
  namespaces: string[];
  omitNamespaces: string[];
  kinds: string[];
  omitKinds: string[];
  onlyNamespacedResources: boolean;
  /** Optional: definitions stored before these existed have none (unrestricted, options off). */
  permissions?: AccountPermissions | undefined;
  onlySpinnakerManaged?: boolean | undefined;
  cacheAllApplicationRelationships?: boolean | undefined;
  /** ACTIVE (serve it) or INACTIVE (keep the definition, serve nothing): the operator's intent. */
  enabled: boolean;
  errorMessage: string;
  failedCount: number;
  createdAt: number;
  updatedAt: number;
  /**
   * The last placement a replica decided for an account no agent held (accounts/dynamic.ts placeUnheld): written
   * conditionally on the generation, so of replicas deciding at once one writes it and places the account.
   */
  placement?: { agentId: string; replica: string } | undefined;
}

export interface StoredDynamicAccount {
  definition: DynamicDefinition;
  /** Sealed kubeconfig contents (source kubeconfigContents), never plaintext. */
  sealedKubeconfig?: Buffer | undefined;
  /** Stamped by the store on every write, never given: what a conditional write compares. */
  generation: number;
}

/** The generation a write expects the row to be at: 'new' for a create (no row of that name may exist). */
export type ExpectedGeneration = number | 'new';

/**
 * The dynamic account definitions, the one truth replicas follow (accounts/dynamic.ts): every write is conditional
 * on the generation the writer read, so of two replicas changing one account at once exactly one wins and the other
 * hears it (409), and every write moves one store-wide version, which replicas poll to learn of a change.
 */
export interface DynamicAccountStore {
  init(): Promise<void>;
  /** Changes with every write of any definition: a primary-key read, cheap enough to poll every second. */
  version(): Promise<number>;
  list(): Promise<StoredDynamicAccount[]>;
  /** Writes the row if it is at `expected`; its new generation, or undefined when it is not (nothing written). */
  save(account: Omit<StoredDynamicAccount, 'generation'>, expected: ExpectedGeneration): Promise<number | undefined>;
  /** Deletes the row if it is at `expected`; false when it is not (or is gone). */
  delete(name: string, expected: number): Promise<boolean>;
  close(): Promise<void>;
}

/** The embedded store: definitions live as long as the process (like the memory cache); one replica, no peers. */
export class MemoryDynamicAccountStore implements DynamicAccountStore {
  private readonly rows = new Map<string, StoredDynamicAccount>();
  private counter = 0;
  async init(): Promise<void> {}
  async version(): Promise<number> {
    return this.counter;
  }
  /** In name order, as the SQL stores list them. */
  async list(): Promise<StoredDynamicAccount[]> {
    return [...this.rows.values()]
      .sort((a, b) => (a.definition.name < b.definition.name ? -1 : a.definition.name > b.definition.name ? 1 : 0))
      .map(copy);
  }
  async save(
    account: Omit<StoredDynamicAccount, 'generation'>,
    expected: ExpectedGeneration,
  ): Promise<number | undefined> {
    const row = this.rows.get(account.definition.name);
    if (expected === 'new' ? row !== undefined : row?.generation !== expected) return undefined;
    const generation = ++this.counter;
    this.rows.set(account.definition.name, copy({ ...account, generation }));
    return generation;
  }
  async delete(name: string, expected: number): Promise<boolean> {
    if (this.rows.get(name)?.generation !== expected) return false;
    this.rows.delete(name);
    this.counter += 1;
    return true;
  }
  async close(): Promise<void> {}
}

/** A row no caller shares: structuredClone alone would turn the sealed Buffer into a plain Uint8Array. */
function copy(r: StoredDynamicAccount): StoredDynamicAccount {
  return {
    definition: structuredClone(r.definition),
    sealedKubeconfig: r.sealedKubeconfig ? Buffer.from(r.sealedKubeconfig) : undefined,
    generation: r.generation,
  };
}

/** MySQL's error for a column that already exists (two replicas adding it at once). */
const ER_DUP_FIELDNAME = 1060;

/** Definitions in MySQL next to the cache, so they survive restarts and are shared by replicas. */
export class MysqlDynamicAccountStore implements DynamicAccountStore {
  private readonly pool: Pool;

  constructor(url: string) {
    this.pool = createStorePool(url, { connectionLimit: 2 });
  }

  async init(): Promise<void> {
    await this.pool.query(
      timed(`CREATE TABLE IF NOT EXISTS sa_dynamic_accounts (
        name VARCHAR(253) CHARACTER SET ascii NOT NULL PRIMARY KEY,
        definition JSON NOT NULL,
        kubeconfig_sealed MEDIUMBLOB NULL,
        updated_at BIGINT NOT NULL
      ) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`),
    );
    // Tables of versions before conditional writes have no generation: rows stored then are at generation 0.
    const [columns] = await this.pool.query<RowDataPacket[]>(
      timed(`SELECT 1 FROM information_schema.COLUMNS
       WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 'sa_dynamic_accounts' AND COLUMN_NAME = 'generation'`),
    );
    if (columns.length === 0) {
      await this.pool
        .query(timed('ALTER TABLE sa_dynamic_accounts ADD COLUMN generation BIGINT NOT NULL DEFAULT 0'))
        .catch((e: unknown) => {
          if ((e as { errno?: number }).errno !== ER_DUP_FIELDNAME) throw e;
        });
    }
    // One row: bumped in the transaction of every write, so a poll reads one primary key to see whether anything
    // changed, and writes of definitions are serialized on it.
    await this.pool.query(
      timed(`CREATE TABLE IF NOT EXISTS sa_dynamic_accounts_version (
        id TINYINT NOT NULL PRIMARY KEY,
        version BIGINT NOT NULL
      ) ENGINE=InnoDB`),
    );
    await this.pool.query(timed('INSERT IGNORE INTO sa_dynamic_accounts_version (id, version) VALUES (1, 0)'));
  }

  async version(): Promise<number> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      timed('SELECT version FROM sa_dynamic_accounts_version WHERE id = 1'),
    );
    return Number(rows[0]?.version ?? 0);
  }

  async list(): Promise<StoredDynamicAccount[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      timed('SELECT definition, kubeconfig_sealed, generation FROM sa_dynamic_accounts ORDER BY name'),
    );
    return rows.map((r) => ({
      definition: (typeof r.definition === 'string' ? JSON.parse(r.definition) : r.definition) as DynamicDefinition,
      sealedKubeconfig: r.kubeconfig_sealed ? Buffer.from(r.kubeconfig_sealed as Buffer) : undefined,
      generation: Number(r.generation),
    }));
  }

  async save(
    account: Omit<StoredDynamicAccount, 'generation'>,
    expected: ExpectedGeneration,
  ): Promise<number | undefined> {
    const d = account.definition;
    return this.write(async (conn, generation) => {
      const values = [JSON.stringify(d), account.sealedKubeconfig ?? null, d.updatedAt, generation];
      if (expected === 'new') {
        const [r] = await conn.query<ResultSetHeader>(
          timed(`INSERT IGNORE INTO sa_dynamic_accounts (definition, kubeconfig_sealed, updated_at, generation, name)
           VALUES (?, ?, ?, ?, ?)`),
          [...values, d.name],
        );
        return r.affectedRows === 1;
      }
      const [r] = await conn.query<ResultSetHeader>(
        timed(`UPDATE sa_dynamic_accounts SET definition = ?, kubeconfig_sealed = ?, updated_at = ?, generation = ?
         WHERE name = ? AND generation = ?`),
        [...values, d.name, expected],
      );
      return r.affectedRows === 1;
    });
  }

  async delete(name: string, expected: number): Promise<boolean> {
    const done = await this.write(async (conn) => {
      const [r] = await conn.query<ResultSetHeader>(
        timed('DELETE FROM sa_dynamic_accounts WHERE name = ? AND generation = ?'),
        [name, expected],
      );
      return r.affectedRows === 1;
    });
    return done !== undefined;
  }

  /** Runs `change` in a transaction with the next version as its generation; commits only if it applied. */
  private async write(
    change: (conn: PoolConnection, generation: number) => Promise<boolean>,
  ): Promise<number | undefined> {
    const conn = await this.pool.getConnection();
    try {
      await conn.beginTransaction();
      const [bump] = await conn.query<ResultSetHeader>(
        timed('UPDATE sa_dynamic_accounts_version SET version = LAST_INSERT_ID(version + 1) WHERE id = 1'),
      );
      const generation = Number(bump.insertId);
      if (!(await change(conn, generation))) {
        await conn.rollback();
        return undefined;
      }
      await conn.commit();
      return generation;
    } catch (e) {
      await conn.rollback().catch(() => undefined);
      throw e;
    } finally {
      conn.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
