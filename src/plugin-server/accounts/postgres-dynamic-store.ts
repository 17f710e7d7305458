import type pg from 'pg';
import { createPostgresPool, inTransaction } from '../cache/postgres-pool.js';
import type {
  DynamicAccountStore,
  DynamicDefinition,
  ExpectedGeneration,
  StoredDynamicAccount,
} from './dynamic-store.js';

/**
 * Definitions in PostgreSQL next to the cache: the contract of MysqlDynamicAccountStore (dynamic-store.ts). Every
 * write bumps the one version row in its transaction, which serializes writers and gives the write its generation.
 */
export class PostgresDynamicAccountStore implements DynamicAccountStore {
  private readonly pool: pg.Pool;

  constructor(url: string) {
    this.pool = createPostgresPool(url, { max: 2 });
  }

  async init(): Promise<void> {
    // Replicas starting together: CREATE … IF NOT EXISTS races on the catalogue, so one at a time.
    await inTransaction(this.pool, async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext('scale-agent sa_dynamic_accounts'))");
      await client.query(`CREATE TABLE IF NOT EXISTS sa_dynamic_accounts (
        name VARCHAR(253) COLLATE "C" NOT NULL PRIMARY KEY,
        definition JSONB NOT NULL,
        kubeconfig_sealed BYTEA NULL,
        updated_at BIGINT NOT NULL,
        generation BIGINT NOT NULL
      )`);
      await client.query(`CREATE TABLE IF NOT EXISTS sa_dynamic_accounts_version (
        id SMALLINT NOT NULL PRIMARY KEY,
        version BIGINT NOT NULL
      )`);
      await client.query('INSERT INTO sa_dynamic_accounts_version (id, version) VALUES (1, 0) ON CONFLICT DO NOTHING');
    });
  }

  async version(): Promise<number> {
    const r = await this.pool.query<{ version: number }>(
      'SELECT version FROM sa_dynamic_accounts_version WHERE id = 1',
    );
    return Number(r.rows[0]?.version ?? 0);
  }

  async list(): Promise<StoredDynamicAccount[]> {
    const r = await this.pool.query<{
      definition: DynamicDefinition;
      kubeconfig_sealed: Buffer | null;
      generation: number;
    }>('SELECT definition, kubeconfig_sealed, generation FROM sa_dynamic_accounts ORDER BY name');
    return r.rows.map((row) => ({
      definition: row.definition,
      sealedKubeconfig: row.kubeconfig_sealed ?? undefined,
      generation: Number(row.generation),
    }));
  }

  async save(
    account: Omit<StoredDynamicAccount, 'generation'>,
    expected: ExpectedGeneration,
  ): Promise<number | undefined> {
    const d = account.definition;
    return this.write(async (client, generation) => {
      const values = [JSON.stringify(d), account.sealedKubeconfig ?? null, d.updatedAt, generation, d.name];
      const r =
        expected === 'new'
          ? await client.query(
              `INSERT INTO sa_dynamic_accounts (definition, kubeconfig_sealed, updated_at, generation, name)
               VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
              values,
            )
          : await client.query(
              `UPDATE sa_dynamic_accounts SET definition = $1, kubeconfig_sealed = $2, updated_at = $3, generation = $4
               WHERE name = $5 AND generation = $6`,
              [...values, expected],
            );
      return r.rowCount === 1;
    });
  }

  async delete(name: string, expected: number): Promise<boolean> {
    const done = await this.write(async (client) => {
      const r = await client.query('DELETE FROM sa_dynamic_accounts WHERE name = $1 AND generation = $2', [
        name,
        expected,
      ]);
      return r.rowCount === 1;
    });
    return done !== undefined;
  }

  /**
   * Runs `change` in a transaction with the next version as its generation, and moves the version to it only if the
   * change applied. The version row is locked first, so writers are serialized on it.
   */
  private async write(
    change: (client: pg.PoolClient, generation: number) => Promise<boolean>,
  ): Promise<number | undefined> {
    return inTransaction(this.pool, async (client) => {
      const current = await client.query<{ version: number }>(
        'SELECT version FROM sa_dynamic_accounts_version WHERE id = 1 FOR UPDATE',
      );
      const generation = Number(current.rows[0]?.version) + 1;
      if (!(await change(client, generation))) return undefined;
      await client.query('UPDATE sa_dynamic_accounts_version SET version = $1 WHERE id = 1', [generation]);
      return generation;
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
