/**
 * Issue 25: a write under a lost lease is refused by the store. Two plugin-server replicas (real processes) share one
 * MariaDB; an agent holds an account through replica A. A batch of the agent's is being written by A — its
 * statement held up in MariaDB by row locks the test takes on its objects, as a slow disk or a lock queue would — when
 * A is frozen (SIGSTOP) past its lease; another agent of the group takes the account over through replica B. Then the
 * locks go and A thaws: its write goes on where it stood, under a lease that is no longer its own. The store must
 * refuse it — nothing of the batch in the cache, the new holder's writes intact — and the stream is closed, so its
 * agent reconnects and is told it stands by. The agents are TestAgent, a stand-in speaking the real gRPC protocol, so
 * the test decides when each batch leaves.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { status } from '@grpc/grpc-js';
import { createConnection, type Connection } from 'mysql2/promise';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../infra/index.js';
import { PluginServerProcess } from '../infra/processes.js';
import { account, change, configMap, eventually, TestAgent } from '../unit/plugin-server/helpers.js';

const ACCOUNT = 'fenced';
const STALE = ['stale-1', 'stale-2', 'stale-3'];

/**
 * Transactions in a lock wait on the test's database (the replicas' connections; asked on the test's own connection,
 * which is on that database): A's write, and nothing else. Counting every LOCK WAIT of the server is not enough: the
 * suite's other files share the MariaDB, and their waits could make the test freeze A too early.
 */
const LOCK_WAITS_IN_OUR_DATABASE =
  'SELECT COUNT(*) AS n FROM information_schema.INNODB_TRX t ' +
  'JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id ' +
  "WHERE t.trx_state = 'LOCK WAIT' AND p.DB = DATABASE()";

/**
 * Polls for A's write waiting on the locked rows: its count, or -1 once the stream has ended. Every 250 ms, not
 * faster: filling INNODB_TRX takes InnoDB's lock-system mutex, and, most likely for that reason, a poll without pause
 * kept A's INSERT from entering its lock wait (two suite runs and three runs alone saw no wait within 30 s; with a
 * pause between polls, the wait showed at once).
 */
async function aWaitsOnTheLocks(lock: Connection, streamEnded: () => boolean): Promise<number> {
  const until = Date.now() + 30_000;
  for (;;) {
    if (streamEnded()) return -1;
    const n = Number(((await lock.query(LOCK_WAITS_IN_OUR_DATABASE))[0] as { n: number }[])[0]?.n);
    if (n > 0) return n;
    if (Date.now() > until) throw new Error("replica A's write did not wait on the locked rows within 30 s");
    await sleep(250);
  }
}

/**
 * Claims the account through `server` for agent-2, again until it is granted (a standby while the lease is live).
 * Should A have been frozen inside its lease renewal's transaction, the lease row stays locked until MariaDB ends
 * that idle transaction (mysql-pool.ts, 5 s): the claim waits that long, within the welcome's 10 s.
 */
async function takeOver(server: PluginServerProcess, cleanups: (() => Promise<unknown>)[]): Promise<TestAgent> {
  for (let attempt = 1; ; attempt++) {
    const agent = new TestAgent(server.grpcAddress);
    cleanups.push(async () => agent.close());
    const welcome = await agent.hello([account(ACCOUNT)], 'agent-2');
    if (welcome.acceptedAccounts.includes(ACCOUNT)) return agent;
    expect(welcome.rejectedAccounts[0]?.reason).toMatch(/^standby:/);
    agent.close();
    if (attempt > 100) throw new Error('replica B never granted the account after A stopped renewing its lease');
    await sleep(300);
  }
}

describe('a write under a lost lease', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  it('is refused by the store once a peer holds the account; the stream is closed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'scale-agent-e2e-fencing-'));
    const db = await createTestDatabase('e2e_fencing');
    cleanups.push(() => db.drop());
    const storage = { type: 'mysql' as const, url: db.url };
    // 6 s: the holder's side (4.5 s) outlasts a slow renewal on a loaded machine (at 3 s, A sometimes closed its
    // streams before the test froze it), and A's write, sent before the freeze, still answers within its 15 s
    // client-side timeout after the takeover.
    const extra = { accounts: { gracePeriodSeconds: 60, leaseSeconds: 6 } };
    const a = await PluginServerProcess.start({ dir, name: 'replica-a', storage, extra });
    cleanups.push(() => a.stop());
    const b = await PluginServerProcess.start({ dir, name: 'replica-b', storage, extra });
    cleanups.push(() => b.stop());

    // A holds the account and its write of the stale batch waits on the locked rows. On a loaded machine A's lease
    // renewal can run late enough that A closes the stream itself before the batch is written (then nothing waits on
    // the locks, and the scenario did not happen): that attempt is dropped and the setup done again — whether the
    // stream ends before the welcome, before the first batch's ack, or while the stale batch is on its way.
    let stale!: TestAgent;
    let lock!: Connection;
    let appliedBefore = 0;
    for (let attempt = 1; ; attempt++) {
      if (attempt > 3) throw new Error('replica A closed the stream before writing the batch, 3 times in a row');
      const agent = new TestAgent(a.grpcAddress);
      stale = agent;
      cleanups.push(async () => agent.close());
      const unlessEnded = <T>(step: Promise<T>): Promise<T | 'ended'> => {
        step.catch(() => undefined); // its timeout, once the stream has ended, is no news
        return Promise.race([step, agent.ended.then(() => 'ended' as const)]);
      };
      const welcome = await unlessEnded(stale.hello([account(ACCOUNT)], 'agent-1'));
      if (welcome === 'ended') continue;
      expect(welcome.acceptedAccounts).toEqual([ACCOUNT]);
      // The stale batch's objects exist already (as a first version), so the test can hold their rows.
      const first = STALE.map((n) => change(ACCOUNT, 'ADDED', configMap(n, '10', { version: 'first' })));
      if ((await unlessEnded(stale.batch(first))) === 'ended') continue;
      appliedBefore = await a.metric('scale_agent_plugin_server_changes_total{result="applied"}');

      // Their rows locked, as a slow disk or a lock queue would hold them up.
      lock = await createConnection(db.url);
      const held = lock;
      cleanups.push(() => held.end());
      await lock.beginTransaction();
      await lock.query(
        "SELECT name FROM sa_objects WHERE account = ? AND grp = '' AND kind_lc = 'configmap' " +
          "AND namespace = 'default' AND name IN (?) FOR UPDATE",
        [ACCOUNT, STALE],
      );
      stale.send({
        changeBatch: {
          seq: ++stale.seq,
          changes: STALE.map((n) => change(ACCOUNT, 'MODIFIED', configMap(n, '11', { version: 'stale' }))),
          observedAtMs: Date.now(),
        },
      });
      let streamEnded = false;
      void stale.ended.then(() => (streamEnded = true));
      // A's write waits on the lock; then A freezes.
      const waiting = await aWaitsOnTheLocks(lock, () => streamEnded);
      if (waiting > 0) break;
      await lock.rollback();
      stale.close();
    }
    process.kill(-a.proc.pid, 'SIGSTOP');
    // Thawed before it is stopped (SIGTERM waits for SIGCONT), should the test fail while A is frozen.
    cleanups.push(async () => process.kill(-a.proc.pid, 'SIGCONT'));

    // Past A's lease at the database's clock, B grants the account to the other agent of the group.
    const successor = await takeOver(b, cleanups);
    // A thaws, its write still held up in MariaDB, and the locks go once A answers again: its statement then goes on
    // under a lease that is B's, within its client-side timeout (15 s from when A sent it: past that, A's write fails
    // on its own and proves nothing either way). Not the other way round: once the statement has run, A's
    // transaction holds a share lock on the lease row (the fence's check) until A rolls it back, and B's renewals
    // wait on it: thawed only then, A holds it as long as it takes to run again, which on a loaded machine can pass
    // B's side of the lease (4.5 s), and B closes its own agent's stream (A kept frozen 3 s after the locks went:
    // passed; 6 s: B closed the stream, in both of two runs).
    process.kill(-a.proc.pid, 'SIGCONT');
    await a.metric('scale_agent_plugin_server_changes_total{result="applied"}');
    await lock.rollback();
    // The new holder writes.
    await successor.batch([change(ACCOUNT, 'ADDED', configMap('after', '20'))]);
    const ended = await stale.ended;
    expect(ended.code).toBe(status.UNAVAILABLE);
    // A has handled the stale batch: the store refused it (the counter of changes dropped for a lost lease), where
    // an unfenced write would have been applied.
    const handled = await eventually(
      async () => ({
        refused: await a.metric('scale_agent_plugin_server_changes_dropped_total{reason="lease_lost"}'),
        applied: (await a.metric('scale_agent_plugin_server_changes_total{result="applied"}')) - appliedBefore,
      }),
      (m) => m.refused + m.applied >= STALE.length,
      30_000,
    );
    expect(handled).toEqual({ refused: STALE.length, applied: 0 });

    // The cache, read through either replica, has the successor's write and nothing of the stale batch.
    const cached = async (server: PluginServerProcess): Promise<Record<string, unknown>> => {
      const out: Record<string, unknown> = {};
      for (const n of ['after', ...STALE]) {
        const r = await server.get<{ manifest: { data: unknown } }>(
          `/manifests/${ACCOUNT}/default/${encodeURIComponent(`configMap ${n}`)}`,
        );
        out[n] = r.status === 200 ? r.body.manifest.data : r.status;
      }
      return out;
    };
    const expected = {
      after: {},
      ...Object.fromEntries(STALE.map((n) => [n, { version: 'first' }])),
    };
    for (const server of [a, b]) {
      expect(
        await eventually(
          () => cached(server),
          (c) => typeof c.after === 'object',
        ),
      ).toEqual(expected);
    }
    // Still B's agent's: the refused stream took nothing with it.
    const held = await b.get<{ state: string }>(`/armory/accounts/${ACCOUNT}`);
    expect(held.body.state).toBe('ACTIVE');
    const again = new TestAgent(a.grpcAddress);
    cleanups.push(async () => again.close());
    expect((await again.hello([account(ACCOUNT)], 'agent-1')).rejectedAccounts[0]?.reason).toMatch(/^standby:/);
  });
});
