import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POSTGRES_MIGRATIONS, PostgresCacheStore } from '../../../src/plugin-server/cache/postgres.js';
import { createPostgresPool } from '../../../src/plugin-server/cache/postgres-pool.js';
import type { StoreBackend } from '../../../src/plugin-server/cache/store.js';
import { createPostgresDatabase, onPostgresDatabases, testPostgres } from '../../infra/postgres.js';
import { leaseClaim, storeChange } from '../../infra/records.js';
import { waitFor } from '../../infra/wait.js';
import { cacheStoreContract } from '../../unit/plugin-server/store-contract.js';

// One PostgreSQL server for the file (Debian's, started here unless SCALE_AGENT_TEST_POSTGRES_URL names one), a fresh
// database per test.
let server: { url: string; stop(): Promise<void> };
beforeAll(async () => {
  server = await testPostgres();
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

async function withDatabase(prefix: string, body: (url: string) => Promise<void>): Promise<void> {
  const db = await createPostgresDatabase(server.url, prefix);
  try {
    await body(db.url);
  } finally {
    await db.drop();
  }
}

// The same contract as the memory and MySQL stores.
cacheStoreContract(
  'postgres',
  onPostgresDatabases<StoreBackend>(
    () => server.url,
    'sa_store',
    (url) => new PostgresCacheStore(url),
  ),
);

describe('postgres store: agents registering new accounts at once', () => {
  it('each gets its account, through two replicas', async () => {
    await withDatabase('sa_claims', async (url) => {
      const stores = [new PostgresCacheStore(url), new PostgresCacheStore(url)];
      try {
        for (const s of stores) await s.init();
        const FLEET = 100;
        const claims = Array.from({ length: FLEET }, (_, i) =>
          stores[i % 2]!.claimAccount(
            ...leaseClaim({ account: `acct-${i}`, replica: `r${i % 2}`, sessionId: `s${i}`, agentId: `agent-${i}` }),
          ),
        );
        const outcomes = await Promise.allSettled(claims);
        expect(outcomes.filter((o) => o.status === 'rejected').map((o) => String(o.reason))).toEqual([]);
        expect(outcomes.every((o) => o.status === 'fulfilled' && o.value.granted)).toBe(true);
        expect((await stores[0]!.listAccounts()).map((r) => r.name).sort()).toEqual(
          Array.from({ length: FLEET }, (_, i) => `acct-${i}`).sort(),
        );
      } finally {
        for (const s of stores) await s.close();
      }
    });
  });

  // A new account's claimants queue on the lease row's insert; an existing row's on its lock (SELECT … FOR UPDATE):
  // without it both read the released lease, both decide to grant, and the second's compare-and-set fails.
  it('one account claimed by two agents through two replicas at once: one grant, one standby', async () => {
    await withDatabase('sa_claim_race', async (url) => {
      const stores = [new PostgresCacheStore(url), new PostgresCacheStore(url)];
      const race = (agents: [string, string]) =>
        Promise.all(
          stores.map((s, i) =>
            s.claimAccount(
              ...leaseClaim({ account: 'dev', replica: `r${i}`, sessionId: agents[i]!, agentId: agents[i]! }),
            ),
          ),
        );
      try {
        for (const s of stores) await s.init();
        const first = await race(['agent-0', 'agent-1']);
        expect(first.map((o) => (o.granted ? 'granted' : o.code)).sort()).toEqual(['granted', 'standby']);
        // Its holder's stream ends: the lease row stays, released, and two other agents race for it.
        const holder = first.find((o) => o.granted)!;
        if (!holder.granted) throw new Error('unreachable');
        await stores[0]!.releaseAccounts(holder.lease.replica, holder.lease.sessionId, ['dev']);
        const second = await race(['agent-2', 'agent-3']);
        expect(second.map((o) => (o.granted ? 'granted' : o.code)).sort()).toEqual(['granted', 'standby']);
      } finally {
        for (const s of stores) await s.close();
      }
    });
  });
});

describe('postgres store: a replica stopped inside a transaction on a lease row', () => {
  // As on MariaDB (mysql-store.test.ts): a frozen replica keeps the lease row's lock with its session open, and a
  // peer's claim would wait on it for as long as the replica stays frozen. PostgreSQL ends the idle session
  // (idle_in_transaction_session_timeout, postgres-pool.ts).
  it("is rolled back by the server, so a peer's claim of the account goes through", async () => {
    await withDatabase('sa_idle_tx', async (url) => {
      const frozen = new PostgresCacheStore(url);
      const peer = new PostgresCacheStore(url);
      // The frozen replica's connection, opened as every store connection is.
      const pool = createPostgresPool(url, { max: 1 });
      try {
        await frozen.init();
        await peer.init();
        const claim = (replica: string, sessionId: string, agentId: string) =>
          leaseClaim({ account: 'dev', replica, sessionId, agentId, leaseMs: 200 });
        expect((await frozen.claimAccount(...claim('r1', 's1', 'agent-a'))).granted).toBe(true);
        // The renewal's first statement ran, then the process stopped: the row stays locked, the session idle.
        const conn = await pool.connect();
        // The server's FATAL message first, then the closed socket ("Connection terminated unexpectedly"): the
        // listener stays, so the second has one too.
        const ended = new Promise<Error>((resolve) => conn.on('error', resolve));
        await conn.query('BEGIN');
        await conn.query("SELECT generation FROM sa_account_leases WHERE account = 'dev' FOR UPDATE");
        await new Promise((r) => setTimeout(r, 300)); // the 200 ms lease is over
        const taken = await peer.claimAccount(...claim('r2', 's2', 'agent-b'));
        expect(taken).toMatchObject({ granted: true, lease: { replica: 'r2', agentId: 'agent-b', generation: 2 } });
        // The stopped session was ended by the server, its transaction rolled back.
        expect((await ended).message).toMatch(/idle-in-transaction timeout/);
        conn.release(true);
      } finally {
        await pool.end().catch(() => undefined);
        await frozen.close();
        await peer.close();
      }
    });
  });
});

describe('postgres store: a write racing a takeover of its account', () => {
  // The fence is read with a share lock as the write's last statement: a takeover that holds the lease row (a claim
  // in its transaction) makes the write wait, and once it commits the write sees the new holder and is refused.
  // A plain read there (READ COMMITTED's snapshot of the statement's start) would see the old holder and let the
  // stale stream write over its successor's.
  it('waits for the takeover to commit, then is refused and writes nothing', async () => {
    await withDatabase('sa_fence_race', async (url) => {
      const store = new PostgresCacheStore(url);
      const peer = new pg.Client({ connectionString: url });
      try {
        await store.init();
        await peer.connect();
        const claimed = await store.claimAccount(
          ...leaseClaim({ account: 'dev', replica: 'r1', sessionId: 's1', agentId: 'agent-a' }),
        );
        expect(claimed.granted).toBe(true);
        const fence = { replica: 'r1', sessionId: 's1', generations: new Map([['dev', 1]]) };
        await store.apply([storeChange('before', '1')], fence);
        // A peer replica's claim, mid-transaction: the row locked and already rewritten for its own stream.
        await peer.query('BEGIN');
        await peer.query("SELECT generation FROM sa_account_leases WHERE account = 'dev' FOR UPDATE");
        await peer.query(
          "UPDATE sa_account_leases SET replica = 'r2', session_id = 's2', agent_id = 'agent-a', generation = 2 " +
            "WHERE account = 'dev'",
        );
        const write = store.apply([storeChange('stale', '2')], fence);
        const outcome = write.then(
          () => 'written',
          (e: Error) => e.name,
        );
        // The write waits on the lease row's lock (seen in the server's own view of its sessions).
        await waitFor('the write to wait on the lease row', async () => {
          const { rows } = await peer.query(
            "SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
          );
          return (rows[0] as { n: number }).n === 1;
        });
        await peer.query('COMMIT');
        expect(await outcome).toBe('LeaseLost');
        const get = (name: string) =>
          store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name });
        expect((await get('before'))?.resourceVersion).toBe('1');
        expect(await get('stale')).toBeUndefined();
      } finally {
        await peer.end().catch(() => undefined);
        await store.close();
      }
    });
  });
});

describe('postgres store: a database migrated by a newer version (rolling upgrade)', () => {
  const newer = POSTGRES_MIGRATIONS.length + 1;

  it('runs beside an additive newer migration and refuses one that requires its version', async () => {
    await withDatabase('sa_store_newer', async (url) => {
      const conn = new pg.Client({ connectionString: url });
      await conn.connect();
      try {
        const first = new PostgresCacheStore(url);
        await first.init();
        await first.close();
        // A newer replica added a table and recorded its migration as compatible with every earlier version.
        await conn.query('CREATE TABLE sa_future (id INT PRIMARY KEY)');
        await conn.query('INSERT INTO sa_schema_migrations (version, applied_at, compatible_from) VALUES ($1, 0, 0)', [
          newer,
        ]);
        const beside = new PostgresCacheStore(url);
        await beside.init();
        await beside.apply([storeChange('a', '1')]);
        expect(
          (await beside.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name: 'a' }))?.uid,
        ).toBe('uid-a');
        await beside.close();
        // Its next migration is one this version cannot run against.
        await conn.query('INSERT INTO sa_schema_migrations (version, applied_at, compatible_from) VALUES ($1, 0, $2)', [
          newer + 1,
          newer,
        ]);
        const refused = new PostgresCacheStore(url);
        await expect(refused.init()).rejects.toMatchObject({
          code: 'SA_ERR_CONFLICT',
          message: expect.stringContaining(
            `PostgreSQL schema is at version ${newer + 1}, which needs a plugin-server that knows at least ` +
              `${newer} migrations; this one knows ${POSTGRES_MIGRATIONS.length}`,
          ) as unknown,
        });
        await refused.close();
        const { rows } = await conn.query('SELECT MAX(version) AS v FROM sa_schema_migrations');
        expect(Number((rows[0] as { v: number }).v)).toBe(newer + 1);
      } finally {
        await conn.end();
      }
    });
  });
});

describe('postgres store: text that array literals would mangle', () => {
  // A batch goes in as one array per column (unnest): every value must come back exactly as it went in.
  it('keeps bodies and keys with quotes, backslashes, braces, commas, NULL and non-ASCII text exactly', async () => {
    await withDatabase('sa_text', async (url) => {
      const store = new PostgresCacheStore(url);
      try {
        await store.init();
        const bodies = [
          '{"data":{"q":"say \\"hi\\"","path":"C:\\\\dir\\\\f","set":"{a,b}","nul":"\\u0000"}}',
          '{"data":{"text":"NULL"}, "spaced" :  [1, 2]}',
          '{"data":{"é":"日本語 ✓ \u{1F600}"}}',
        ];
        await store.apply(bodies.map((json, i) => storeChange(i === 1 ? 'NULL' : `cm-${i}`, String(i + 1), { json })));
        const list = await store.list({ account: 'dev', kind: 'ConfigMap' });
        expect(list.map((o) => [o.name, o.json])).toEqual([
          ['NULL', bodies[1]],
          ['cm-0', bodies[0]],
          ['cm-2', bodies[2]],
        ]);
      } finally {
        await store.close();
      }
    });
  });
});
