import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { timed } from '../cache/mysql-timeout.js';
import type { AccountPermissions } from '../cache/store.js';

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
}

export interface StoredDynamicAccount {
  definition: DynamicDefinition;
  /** Sealed kubeconfig contents (source kubeconfigContents), never plaintext. */
  sealedKubeconfig?: Buffer | undefined;
}

export interface DynamicAccountStore {
  init(): Promise<void>;
  list(): Promise<StoredDynamicAccount[]>;
  save(account: StoredDynamicAccount): Promise<void>;
  delete(name: string): Promise<void>;
  close(): Promise<void>;
}

/** The embedded store: definitions live as long as the process (like the memory cache). */
export class MemoryDynamicAccountStore implements DynamicAccountStore {
  private readonly rows = new Map<string, StoredDynamicAccount>();
  async init(): Promise<void> {}
  async list(): Promise<StoredDynamicAccount[]> {
    return [...this.rows.values()].map((r) => structuredClone(r));
  }
  async save(account: StoredDynamicAccount): Promise<void> {
    this.rows.set(account.definition.name, structuredClone(account));
  }
  async delete(name: string): Promise<void> {
    this.rows.delete(name);
  }
  async close(): Promise<void> {}
}

/** Definitions in MySQL next to the cache, so they survive restarts and are shared by replicas. */
export class MysqlDynamicAccountStore implements DynamicAccountStore {
  private readonly pool: Pool;

  constructor(url: string) {
    this.pool = mysql.createPool({ uri: url, connectionLimit: 2, charset: 'utf8mb4' });
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
  }

  async list(): Promise<StoredDynamicAccount[]> {
    const [rows] = await this.pool.query<RowDataPacket[]>(
      timed('SELECT definition, kubeconfig_sealed FROM sa_dynamic_accounts ORDER BY name'),
    );
    return rows.map((r) => ({
      definition: (typeof r.definition === 'string' ? JSON.parse(r.definition) : r.definition) as DynamicDefinition,
      sealedKubeconfig: r.kubeconfig_sealed ? Buffer.from(r.kubeconfig_sealed as Buffer) : undefined,
    }));
  }

  async save(account: StoredDynamicAccount): Promise<void> {
    await this.pool.query(
      timed(`INSERT INTO sa_dynamic_accounts (name, definition, kubeconfig_sealed, updated_at) VALUES (?, ?, ?, ?)
       ON DUPLICATE KEY UPDATE definition = VALUES(definition), kubeconfig_sealed = VALUES(kubeconfig_sealed),
       updated_at = VALUES(updated_at)`),
      [
        account.definition.name,
        JSON.stringify(account.definition),
        account.sealedKubeconfig ?? null,
        account.definition.updatedAt,
      ],
    );
  }

  async delete(name: string): Promise<void> {
    await this.pool.query(timed('DELETE FROM sa_dynamic_accounts WHERE name = ?'), [name]);
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
