import mysql, { type Pool, type RowDataPacket } from 'mysql2/promise';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS, MysqlCacheStore } from '../../../src/plugin-server/cache/mysql.js';
import { createStorePool } from '../../../src/plugin-server/cache/mysql-pool.js';
import type { ScopeKey, StoreBackend } from '../../../src/plugin-server/cache/store.js';
import { createTestDatabase, onTestDatabases } from '../../infra/index.js';
import { createDatabase, MariaDb } from '../../infra/mariadb.js';
import { accountRecord, leaseClaim, storeChange } from '../../infra/records.js';
import { cacheStoreContract } from '../../unit/plugin-server/store-contract.js';
import { APPLICATION_INDEX } from '../../../src/plugin-server/views/app-index.js';

// The same contract as the memory store, against the real MariaDB of the test run (one database per test).
cacheStoreContract(
  'mysql',
  onTestDatabases<StoreBackend>('sa_store', (url) => new MysqlCacheStore(url)),
);

describe('mysql store: account records from before permissions and the Clouddriver options', () => {
  // A record as the previous version wrote it (and as a replica of it still writes during a rolling upgrade): today's
  // without the three fields it did not know.
  const {
    permissions: _permissions,
    onlySpinnakerManaged: _onlySpinnakerManaged,
    cacheAllApplicationRelationships: _cacheAll,
    ...old
  } = accountRecord({ name: 'old', registeredAt: 1_700_000_000_000 });
  const defaults = {
    permissions: { READ: [], WRITE: [] },
    onlySpinnakerManaged: false,
    cacheAllApplicationRelationships: false,
  };

  it('the migration writes the defaults into stored records and keeps what a record already has', async () => {
    // The database as the previous version left it: every migration before this one applied, then its records.
    // Found by content, not number, so migrations appended by other changes do not move it.
    const index = MIGRATIONS.findIndex((m) => m.some((sql) => sql.includes('"onlySpinnakerManaged":false')));
    expect(index).toBeGreaterThan(0);
    const db = await createTestDatabase('sa_store_mig');
    const conn = await mysql.createConnection(db.url);
    try {
      await conn.query(
        'CREATE TABLE sa_schema_migrations (version INT NOT NULL PRIMARY KEY, applied_at BIGINT NOT NULL)',
      );
      for (let i = 0; i < index; i++) {
        for (const sql of MIGRATIONS[i] ?? []) await conn.query(sql);
        await conn.query('INSERT INTO sa_schema_migrations (version, applied_at) VALUES (?, 0)', [i + 1]);
      }
      const insert = 'INSERT INTO sa_accounts (name, record, updated_at) VALUES (?, ?, 0)';
      await conn.query(insert, ['old', JSON.stringify(old)]);
      const kept = { ...old, name: 'kept', permissions: { READ: ['team'], WRITE: ['ops'] } };
      await conn.query(insert, ['kept', JSON.stringify(kept)]);
      const store = new MysqlCacheStore(db.url);
      await store.init();
      await store.close();
      const [rows] = await conn.query<RowDataPacket[]>('SELECT name, record FROM sa_accounts ORDER BY name');
      expect(rows.map((r) => [r.name, JSON.parse(r.record as string)])).toEqual([
        ['kept', { ...kept, onlySpinnakerManaged: false, cacheAllApplicationRelationships: false }],
        ['old', { ...old, ...defaults }],
      ]);
    } finally {
      await conn.end();
      await db.drop();
    }
  });

  it('listAccounts reads a record without the new fields as unrestricted with both options off', async () => {
    const db = await createTestDatabase('sa_store_old');
    const store = new MysqlCacheStore(db.url);
    const conn = await mysql.createConnection(db.url);
    try {
      await store.init();
      // Written after the migration by a replica of the previous version.
      await conn.query('INSERT INTO sa_accounts (name, record, updated_at) VALUES (?, ?, 0)', [
        'old',
        JSON.stringify(old),
      ]);
      expect(await store.listAccounts()).toEqual([{ ...old, ...defaults }]);
    } finally {
      await conn.end();
      await store.close();
      await db.drop();
    }
  });
});

describe('mysql store: a write InnoDB picks as a deadlock victim', () => {
  it('is run again and lands, where it used to fail the agent stream', async () => {
    const db = await createTestDatabase('sa_deadlock');
    const store = new MysqlCacheStore(db.url);
    const other = await mysql.createConnection(db.url);
    try {
      await store.init();
      const cm = (name: string, rv: string, data = 'v') =>
        storeChange(name, rv, { json: JSON.stringify({ metadata: { name }, data: { data } }) });
      const filler = Array.from({ length: 200 }, (_, i) => cm(`filler-${i}`, String(10 + i)));
      await store.apply([cm('a', '1'), cm('b', '2'), ...filler]);
      // Another writer (a peer replica, say) holds row b and, being heavier (200 rows changed), is not the one InnoDB
      // rolls back: the store's transaction, which takes a then waits for b, is.
      await other.beginTransaction();
      // By primary key, so only these rows are locked (a scan would lock every row it reads).
      const where = "account = 'dev' AND grp = '' AND kind_lc = 'configmap' AND namespace = 'ns' AND name";
      await other.query(`UPDATE sa_objects SET updated_at = updated_at + 1 WHERE ${where} LIKE 'filler-%'`);
      await other.query(`UPDATE sa_objects SET updated_at = updated_at + 1 WHERE ${where} = 'b'`);
      const write = store.apply([cm('a', '100', 'new-a'), cm('b', '101', 'new-b')]);
      await new Promise((r) => setTimeout(r, 300)); // the store now holds a and waits for b
      // This closes the cycle: InnoDB rolls back the lighter transaction, the store's, which runs again after commit.
      await other.query(`UPDATE sa_objects SET updated_at = updated_at + 1 WHERE ${where} = 'a'`);
      await other.commit();
      await write;
      expect(store.deadlockRetries).toBeGreaterThanOrEqual(1);
      const a = await store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name: 'a' });
      const b = await store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name: 'b' });
      expect([a?.resourceVersion, b?.resourceVersion]).toEqual(['100', '101']);
      expect(JSON.parse(b!.json).data).toEqual({ data: 'new-b' });
    } finally {
      await other.end();
      await store.close();
      await db.drop();
    }
  });
});

describe('mysql store: raw control characters', () => {
  // The statement carries values as literals (cache/mysql-literal.ts): NUL, Ctrl-Z, CR and LF are escaped there.
  // Checked JSON never has them raw, but the store keeps whatever it is given, and an index key parsed from an
  // object (a label or annotation value) may hold them.
  it('are kept in an object and in its index keys', async () => {
    const db = await createTestDatabase('sa_control_chars');
    const store = new MysqlCacheStore(db.url);
    try {
      store.addIndex(APPLICATION_INDEX);
      await store.init();
      const raw = `a\0b\x1ac\rd\ne\bf\tg'\\`;
      await store.apply([
        storeChange('a', '5', { json: `{"raw":"${raw}"}`, index: { application: raw, cluster: raw, owner: '' } }),
      ]);
      const got = await store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name: 'a' });
      expect(got!.json).toBe(`{"raw":"${raw}"}`);
      expect((await store.byIndex('application', [raw])).map((o) => [o.name, o.index?.cluster])).toEqual([['a', raw]]);
    } finally {
      await store.close();
      await db.drop();
    }
  });
});

describe('mysql store: a server whose sql_mode reads backslashes as themselves', () => {
  // NO_BACKSLASH_ESCAPES set globally (a private MariaDB: the shared one's mode stays), so every new session starts
  // with it. The store's literals escape with backslashes: without the session fix in mysql-pool.ts this write fails
  // with a syntax error (the quote after a backslash ends the literal) or stores something else.
  it('keeps quotes and backslashes as given', async () => {
    const server = await MariaDb.start();
    try {
      const admin = await mysql.createConnection(server.url);
      await admin.query("SET GLOBAL sql_mode = CONCAT(@@GLOBAL.sql_mode, ',NO_BACKSLASH_ESCAPES')");
      await admin.end();
      const db = await createDatabase(server.url, 'sa_no_backslash');
      const store = new MysqlCacheStore(db.url);
      try {
        await store.init();
        const tricky = `it\\'s'); DROP TABLE sa_objects; -- \\`;
        await store.apply([storeChange('a', '5', { json: JSON.stringify({ v: tricky }) })]);
        const got = await store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name: 'a' });
        expect(JSON.parse(got!.json)).toEqual({ v: tricky });
      } finally {
        await store.close();
      }
    } finally {
      await server.stop();
    }
  });
});

/**
 * A fresh database and store holding one synced scope of `dev` (namespace `namespace`, object `a` at
 * resourceVersion 5), for `body`; closed and dropped after.
 */
async function withSyncedScope(
  database: string,
  namespace: string,
  body: (store: MysqlCacheStore, scope: ScopeKey, url: string) => Promise<void>,
): Promise<void> {
  const db = await createTestDatabase(database);
  const store = new MysqlCacheStore(db.url);
  try {
    await store.init();
    const scope = { account: 'dev', group: '', kind: 'ConfigMap', namespace };
    await store.apply([
      { op: 'syncStart', scope, version: 'v1' },
      storeChange('a', '5'),
      { op: 'syncEnd', scope, version: 'v1', resourceVersion: '5' },
    ]);
    await body(store, scope, db.url);
  } finally {
    await store.close();
    await db.drop();
  }
}

describe('mysql store: a write one of whose statements fails', () => {
  // The store queues a write's statements without waiting for each (rows, then the scopes' states): one that fails
  // must take the ones before and after it with it.
  it('lands nothing: neither the rows of its other statements nor its scope states', async () => {
    await withSyncedScope('sa_failed_write', '', async (store, scope) => {
      // 500 rows (one full statement) that would land, then one the column refuses (a name over 253 characters:
      // the wire refuses it first; here it stands for any statement the server fails).
      const rows = Array.from({ length: 500 }, (_, i) => storeChange(`ok-${i}`, String(10 + i)));
      await expect(store.apply([...rows, storeChange('x'.repeat(300), '600')])).rejects.toThrow(/write failed/);
      expect((await store.list({ account: 'dev' })).map((o) => o.name)).toEqual(['a']);
      expect(await store.resumePoints('dev')).toEqual([{ ...scope, version: 'v1', resourceVersion: '5' }]);
    });
  });
});

describe('mysql store: the round trips of a write', () => {
  /** Counts the statements' packets the store's write connections send (each is one round trip). */
  function countPackets(store: MysqlCacheStore): { sent: number } {
    const counter = { sent: 0 };
    const core = (store as unknown as { pool: Pool }).pool.pool;
    const wrapped = new WeakSet<object>();
    core.on('acquire', (conn: { query: (...args: unknown[]) => unknown }) => {
      if (wrapped.has(conn)) return;
      wrapped.add(conn);
      const query = conn.query.bind(conn);
      conn.query = (...args: unknown[]) => {
        counter.sent += 1;
        return query(...args);
      };
    });
    return counter;
  }

  it('sends a watch event to a synced scope as one packet: the transaction, its row, its resume point and COMMIT', async () => {
    await withSyncedScope('sa_round_trips', 'ns', async (store, scope, url) => {
      const packets = countPackets(store);
      await store.apply([storeChange('a', '6', { type: 'MODIFIED', json: '{"data":{"k":"v;1"}}' })]);
      expect(packets.sent).toBe(1);
      // And it landed, committed: another connection reads the object and the resume point it moved.
      expect((await store.get({ account: 'dev', kind: 'ConfigMap', namespace: 'ns', name: 'a' }))?.json).toBe(
        '{"data":{"k":"v;1"}}',
      );
      const other = new MysqlCacheStore(url);
      try {
        await other.init();
        expect(await other.resumePoints('dev')).toEqual([{ ...scope, version: 'v1', resourceVersion: '6' }]);
      } finally {
        await other.close();
      }
    });
  });

  it('lands nothing when a write of several packets fails in a later one', async () => {
    await withSyncedScope('sa_failed_packets', '', async (store, scope) => {
      // 20 objects of 600 KB, three packets of rows (4 MiB each at most), and a row the column refuses in the middle
      // one: the last packet still runs, inside the transaction, and the whole write is rolled back.
      const big = JSON.stringify({ data: { v: 'x'.repeat(600 * 1024) } });
      const rows = Array.from({ length: 20 }, (_, i) => storeChange(`big-${i}`, String(10 + i), { json: big }));
      const refused = storeChange('x'.repeat(300), '600');
      const packets = countPackets(store);
      await expect(store.apply([...rows.slice(0, 10), refused, ...rows.slice(10)])).rejects.toThrow(/write failed/);
      expect(packets.sent).toBe(4); // three packets, then the rollback
      expect((await store.list({ account: 'dev' })).map((o) => o.name)).toEqual(['a']);
      expect(await store.resumePoints('dev')).toEqual([{ ...scope, version: 'v1', resourceVersion: '5' }]);
      // The same rows without the refused one land whole, across the packets.
      await store.apply(rows);
      expect((await store.list({ account: 'dev' })).length).toBe(21);
    });
  });
});

describe('mysql store: agents registering new accounts at once', () => {
  // A fleet connecting to a fresh store: each claim inserts its account's lease row, and InnoDB's locks on the gap
  // those rows go into make concurrent claims deadlock. The victim must be run again, not fail its agent's stream
  // (it did: the retry looked for the deadlock on the wrong error object).
  it('each gets its account, deadlock victims run again', async () => {
    const FLEET = 100; // 36 of 40 failed before the fix
    const db = await createTestDatabase('sa_claims');
    const stores = [new MysqlCacheStore(db.url), new MysqlCacheStore(db.url)];
    try {
      for (const s of stores) await s.init();
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
      await db.drop();
    }
  });
});

describe('mysql store: leases while every object connection is busy', () => {
  // A fleet's initial sync keeps all object connections busy with a queue of writes behind them; a lease renewal
  // queued behind those writes missed the holder's side of the lease and the replica dropped every stream.
  it('are renewed and claimed without waiting for the object writes', async () => {
    const db = await createTestDatabase('sa_ctl_pool');
    const store = new MysqlCacheStore(db.url, { connectionLimit: 1 });
    const other = await mysql.createConnection(db.url);
    try {
      await store.init();
      await store.apply([storeChange('held', '1')]);
      // The only object connection waits on a row lock (as behind a slow disk), another write queued behind it.
      await other.beginTransaction();
      await other.query("SELECT name FROM sa_objects WHERE account = 'dev' AND name = 'held' FOR UPDATE");
      const writes = Promise.all([store.apply([storeChange('held', '2')]), store.apply([storeChange('next', '3')])]);
      const ownership = Promise.all([
        store.renewLeases('r1', 60_000),
        store.claimAccount(...leaseClaim({ account: 'prod', replica: 'r1', sessionId: 's1', agentId: 'agent-1' })),
        store.listLeases(),
      ]).then(() => 'ownership done' as const);
      // Bounded only so the test ends: before, the ownership calls waited the whole lock wait (50 s) behind the writes.
      const first = await Promise.race([
        ownership,
        writes.then(() => 'writes done' as const),
        new Promise<'neither'>((r) => setTimeout(() => r('neither'), 10_000)),
      ]);
      expect(first).toBe('ownership done');
      await other.rollback();
      await writes;
      expect(
        (await store.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name: 'next' }))
          ?.resourceVersion,
      ).toBe('3');
    } finally {
      await other.end();
      await store.close();
      await db.drop();
    }
  });
});

describe('mysql store: a replica stopped inside a transaction on a lease row', () => {
  // A frozen replica (SIGSTOP, a stalled VM) stops between two statements of its lease renewal and keeps the row's
  // lock; its TCP connection stays open, so the server sees a live session. Before the sessions were bounded, a
  // peer's claim of the account waited on that lock until its own statement timed out (15 s, client side), again at
  // every attempt: the takeover the lease exists for never came while the frozen replica lived.
  it("is rolled back by the server, so a peer's claim of the account goes through", async () => {
    const db = await createTestDatabase('sa_idle_tx');
    const frozen = new MysqlCacheStore(db.url);
    const peer = new MysqlCacheStore(db.url);
    // The frozen replica's connection, opened as every store connection is.
    const pool = createStorePool(db.url, { connectionLimit: 1 });
    try {
      await frozen.init();
      await peer.init();
      // One cluster, two agents of its group: the second may take over once the 200 ms lease is over.
      const claim = (replica: string, sessionId: string, agentId: string) =>
        leaseClaim({ account: 'dev', replica, sessionId, agentId, leaseMs: 200 });
      expect((await frozen.claimAccount(...claim('r1', 's1', 'agent-a'))).granted).toBe(true);
      // The renewal's first statements ran, then the process stopped: the row stays locked, the session idle.
      const conn = await pool.getConnection();
      await conn.beginTransaction();
      await conn.query("SELECT generation FROM sa_account_leases WHERE account = 'dev' FOR UPDATE");
      await new Promise((r) => setTimeout(r, 300)); // the 200 ms lease is over
      const taken = await peer.claimAccount(...claim('r2', 's2', 'agent-b'));
      expect(taken).toMatchObject({ granted: true, lease: { replica: 'r2', agentId: 'agent-b', generation: 2 } });
      // The stopped session was ended by the server, its transaction rolled back.
      await expect(conn.query('SELECT 1')).rejects.toThrow();
    } finally {
      await pool.end().catch(() => undefined);
      await frozen.close();
      await peer.close();
      await db.drop();
    }
  });
});

describe('mysql store: many accounts syncing at once', () => {
  it("do not deadlock on each other's gaps (a fleet resyncing after a restart)", async () => {
    const db = await createTestDatabase('sa_fleet');
    const store = new MysqlCacheStore(db.url, { connectionLimit: 8 });
    try {
      await store.init();
      const accounts = Array.from({ length: 8 }, (_, i) => `fleet-${i}`);
      const change = (account: string, kind: string, name: string, rv: number) => ({
        op: 'change' as const,
        change: {
          type: 'ADDED' as const,
          account,
          apiVersion: 'v1',
          kind,
          namespace: 'ns',
          name,
          uid: `${account}-${name}`,
          resourceVersion: String(rv),
          json: JSON.stringify({ kind, metadata: { name } }),
        },
      });
      // As an agent resyncs: per kind, SyncStart, the objects, SyncEnd (whose sweep deletes a range of the kind).
      const sync = (account: string, round: number) =>
        ['ConfigMap', 'Pod', 'Service'].flatMap((kind) => {
          const scope = { account, group: '', kind, namespace: '' };
          return [
            { op: 'syncStart' as const, scope, version: 'v1' },
            ...Array.from({ length: 40 }, (_, i) =>
              change(account, kind, `${kind.toLowerCase()}-${i}`, round * 100 + i),
            ),
            { op: 'syncEnd' as const, scope, version: 'v1', resourceVersion: String(round * 100 + 99) },
          ];
        });
      for (let round = 1; round <= 6; round++) {
        await Promise.all(accounts.map((a) => store.apply(sync(a, round))));
      }
      // Every write landed the first time: none was chosen as a deadlock victim.
      expect(store.deadlockRetries).toBe(0);
      for (const account of accounts) {
        const pods = await store.list({ account, group: '', kind: 'Pod' });
        expect(pods.map((p) => p.resourceVersion)).toEqual(expect.arrayContaining(['600', '639']));
        expect(pods).toHaveLength(40);
      }
    } finally {
      await store.close();
      await db.drop();
    }
  });
});

describe('mysql store: a database migrated by a newer version (rolling upgrade)', () => {
  const newer = MIGRATIONS.length + 1;
  const cm = {
    op: 'change' as const,
    change: {
      type: 'ADDED' as const,
      account: 'dev',
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'ns',
      name: 'a',
      uid: 'u-a',
      resourceVersion: '1',
      json: JSON.stringify({ metadata: { name: 'a' } }),
    },
  };

  it('runs beside an additive newer migration and refuses one that requires its version', async () => {
    const db = await createTestDatabase('sa_store_newer');
    const conn = await mysql.createConnection(db.url);
    try {
      const first = new MysqlCacheStore(db.url);
      await first.init();
      await first.close();
      // A newer replica added a table and recorded its migration as compatible with every earlier version.
      await conn.query('CREATE TABLE sa_future (id INT PRIMARY KEY)');
      await conn.query('INSERT INTO sa_schema_migrations (version, applied_at, compatible_from) VALUES (?, 0, 0)', [
        newer,
      ]);
      const beside = new MysqlCacheStore(db.url);
      await beside.init();
      await beside.apply([cm]);
      expect(
        (await beside.get({ account: 'dev', group: '', kind: 'ConfigMap', namespace: 'ns', name: 'a' }))?.uid,
      ).toBe('u-a');
      await beside.close();
      // Its next migration is one this version cannot run against.
      await conn.query('INSERT INTO sa_schema_migrations (version, applied_at, compatible_from) VALUES (?, 0, ?)', [
        newer + 1,
        newer,
      ]);
      const refused = new MysqlCacheStore(db.url);
      await expect(refused.init()).rejects.toMatchObject({
        code: 'SA_ERR_CONFLICT',
        message: expect.stringContaining(
          `schema is at version ${newer + 1}, which needs a plugin-server that knows at least ${newer} migrations; ` +
            `this one knows ${MIGRATIONS.length}`,
        ) as unknown,
      });
      await refused.close();
      // Nothing was applied or recorded by the refused replica.
      const [rows] = await conn.query<RowDataPacket[]>('SELECT MAX(version) AS v FROM sa_schema_migrations');
      expect(Number(rows[0]?.v)).toBe(newer + 1);
    } finally {
      await conn.end();
      await db.drop();
    }
  });
});
