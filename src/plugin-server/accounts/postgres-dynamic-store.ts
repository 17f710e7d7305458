import type pg from 'pg';
import { createPostgresPool } from '../cache/postgres-pool.js';
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
    await this.transaction(async (client) => {
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
      return true;
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

  /** Runs `change` in a transaction with the next version as its generation; commits only if it applied. */
  private async write(
    change: (client: pg.PoolClient, generation: number) => Promise<boolean>,
  ): Promise<number | undefined> {
    let generation = 0;
    const applied = await this.transaction(async (client) => {
      const bump = await client.query<{ version: number }>(
        'UPDATE sa_dynamic_accounts_version SET version = version + 1 WHERE id = 1 RETURNING version',
      );
      generation = Number(bump.rows[0]?.version);
      return change(client, generation);
    });
    return applied ? generation : undefined;
  }

  /** Commits when `body` answers true, rolls back otherwise or when it throws. */
  private async transaction(body: (client: pg.PoolClient) => Promise<boolean>): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const ok = await body(client);
      await client.query(ok ? 'COMMIT' : 'ROLLBACK');
      return ok;
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw e;
    } finally {
      client.release();
    }
  }

  async close(): Promise<void> {
    await this.pool.end();
  }
}
