/**
 * Issue 25 (randomized schedules, seeds 6 and 8): the orphan sweep's grace period is judged at the database's clock,
 * not at a replica's. Two plugin-server replicas (real processes) share one MariaDB; replica A runs under Debian's
 * libfaketime so the test steps its wall clock (as a bad NTP step would). An agent (TestAgent, a stand-in speaking
 * the real gRPC protocol) registers an account through replica B and goes away: the account is ORPHANED. A's clock
 * then steps 60 s ahead, far past the grace period by A's own count; A must not remove the account before the grace
 * period has passed since the release at the database's clock (the old code removed it on A's next sweep, and another
 * cluster's agents could take the name at once).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PluginServerProcess } from '../infra/processes.js';
import { useStack } from '../infra/stack.js';
import { ClockSkew } from '../infra/schedules/faketime.js';
import { account, eventually, TestAgent } from '../unit/plugin-server/helpers.js';

const ACCOUNT = 'swept';
const GRACE_SECONDS = 20;
/** Lease of 6 s: each replica's housekeeping (refresh, then sweep) runs every 2 s. */
const LEASE_SECONDS = 6;

interface AccountBody {
  state: string;
  heldBy: unknown;
}

describe('orphan sweep on the database clock', () => {
  const stack = useStack({
    name: 'sweep-clock',
    store: 'mysql',
    namespaces: [],
    replicas: 0,
    server: { extra: { accounts: { gracePeriodSeconds: GRACE_SECONDS, leaseSeconds: LEASE_SECONDS } } },
  });
  let a: PluginServerProcess;
  let b: PluginServerProcess;
  let skewA: ClockSkew;

  beforeAll(async () => {
    skewA = ClockSkew.in(stack.dir, 'replica-a');
    a = await stack.addReplica({ name: 'replica-a', env: skewA.env() });
    b = await stack.addReplica({ name: 'replica-b' });
  });

  /** Steps A's wall clock and waits until the process reads it (its HTTP Date header says so). */
  async function stepA(seconds: number): Promise<void> {
    skewA.set(seconds);
    const offset = async () => {
      const res = await fetch(`${a.httpBase}/healthz`);
      return Date.parse(res.headers.get('date') ?? '') - Date.now();
    };
    await eventually(offset, (ms) => Math.abs(ms - seconds * 1000) < 3_000, 15_000);
  }

  it('a replica whose clock steps ahead keeps an orphaned account until the grace period is over at the DB clock', async () => {
    const agent = new TestAgent(b.grpcAddress);
    stack.defer(async () => agent.close());
    expect((await agent.hello([account(ACCOUNT)])).acceptedAccounts).toEqual([ACCOUNT]);
    await eventually(
      () => a.get<AccountBody>(`/armory/accounts/${ACCOUNT}`),
      (r) => r.status === 200 && typeof r.body.heldBy === 'object' && r.body.heldBy !== null,
      30_000,
    );
    // The agent goes away: B releases the lease, and A learns the account is ORPHANED (from now, on its clock).
    agent.close();
    const released = Date.now();
    await eventually(
      () => a.get<AccountBody>(`/armory/accounts/${ACCOUNT}`),
      (r) => r.status === 200 && r.body.state === 'ORPHANED',
      30_000,
    );
    await stepA(60);
    // Several of A's sweeps (every 2 s) with its clock 60 s ahead: by its own count the grace period is long over.
    await sleep(3 * (LEASE_SECONDS / 3) * 1000);
    // The check below is only meaningful inside the grace period (real time, as the database counts it).
    expect(Date.now() - released).toBeLessThan(GRACE_SECONDS * 1000);
    for (const server of [a, b]) {
      const r = await server.get<AccountBody>(`/armory/accounts/${ACCOUNT}`);
      expect(r.status, server.httpBase).toBe(200);
      expect(r.body.state, server.httpBase).toBe('ORPHANED');
    }
    // Once the grace period is over at the database's clock, the account is swept.
    await eventually(
      () => b.get<AccountBody>(`/armory/accounts/${ACCOUNT}`),
      (r) => r.status === 404,
      GRACE_SECONDS * 1000 + 30_000,
    );
    expect(Date.now() - released).toBeGreaterThanOrEqual(GRACE_SECONDS * 1000);
  });
});
