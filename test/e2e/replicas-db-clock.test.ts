/**
 * Issue 25, case 5: task staleness is judged at the database's clock, not at a replica's. Two plugin-server replicas
 * (real processes) share one MariaDB, each under Debian's libfaketime so the test steps its wall clock (as a bad NTP
 * step would); an operation's agent (TestAgent, a stand-in speaking the real gRPC protocol, so the test decides when
 * the result comes back) holds the account through replica B, so B runs the tasks and A may reap them.
 * - A 30 s ahead does not fail B's live task (it compared its own clock with B's marks), nor does A fail a task of B
 *   30 s behind; each completes as succeeded once the agent answers.
 * - A task B really stopped marking (B frozen with SIGSTOP past the staleness bound) is failed by A as retryable,
 *   and stays failed when B thaws and its agent's result comes back: B's write of the outcome is refused.
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { resultMessage } from '../../src/shared/ops/index.js';
import type { PluginServerProcess } from '../infra/processes.js';
import { useStack } from '../infra/stack.js';
import { ClockSkew } from '../infra/schedules/faketime.js';
import { account, eventually, TestAgent } from '../unit/plugin-server/helpers.js';

const ACCOUNT = 'clocked';
/** What the server's task housekeeping uses: marked every 2 s, failed by any replica when unmarked for 10 s. */
const TASK_HEARTBEAT_MS = 2_000;
const TASK_STALE_MS = 10_000;

interface TaskBody {
  status: { completed: boolean; failed: boolean; retryable: boolean };
  history: { status: string }[];
}

describe('task staleness on the database clock', () => {
  const stack = useStack({
    name: 'db-clock',
    store: 'mysql',
    namespaces: [],
    replicas: 0,
    // A lease longer than B is frozen below, so B keeps its agent's stream through it (only its tasks go silent).
    server: {
      extra: {
        accounts: { gracePeriodSeconds: 120, leaseSeconds: 60 },
        operations: { timeoutSeconds: 300, cacheWaitSeconds: 5 },
      },
    },
  });
  let a: PluginServerProcess;
  let b: PluginServerProcess;
  let skewA: ClockSkew;
  let skewB: ClockSkew;
  let agent: TestAgent;

  beforeAll(async () => {
    skewA = ClockSkew.in(stack.dir, 'replica-a');
    skewB = ClockSkew.in(stack.dir, 'replica-b');
    a = await stack.addReplica({ name: 'replica-a', env: skewA.env() });
    b = await stack.addReplica({ name: 'replica-b', env: skewB.env() });
    agent = new TestAgent(b.grpcAddress);
    stack.defer(async () => agent.close());
    expect((await agent.hello([account(ACCOUNT)])).acceptedAccounts).toEqual([ACCOUNT]);
    // The stand-in agent's heartbeats, so B does not close its stream as idle during the long waits below.
    const beat = setInterval(() => agent.send({ heartbeat: { sentAtMs: Date.now() } }), 5_000);
    stack.defer(async () => clearInterval(beat));
    await eventually(
      () => a.get<{ heldBy?: unknown }>(`/armory/accounts/${ACCOUNT}`),
      (r) => r.status === 200 && typeof r.body.heldBy === 'object',
      30_000,
    );
  });

  /** Steps the replica's wall clock and waits until the process reads it (its HTTP Date header says so). */
  async function skew(server: PluginServerProcess, clock: ClockSkew, seconds: number): Promise<void> {
    clock.set(seconds);
    const offset = async () => {
      const res = await fetch(`${server.httpBase}/healthz`);
      return Date.parse(res.headers.get('date') ?? '') - Date.now();
    };
    await eventually(offset, (ms) => Math.abs(ms - seconds * 1000) < 3_000, 15_000);
  }

  /** Posts an operation to B; returns the task id and the operation as its agent received it. */
  async function post(): Promise<{ id: string; operationId: string }> {
    const seen = agent.received.length;
    const res = await fetch(`${b.httpBase}/kubernetes/ops`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([
        { scaleManifest: { account: ACCOUNT, location: 'shop', manifestName: 'deployment web', replicas: 2 } },
      ]),
    });
    expect(res.status).toBe(200);
    const id = ((await res.json()) as { id: string }).id;
    const op = await agent.next((m) => m.operation !== undefined && agent.received.indexOf(m) >= seen, 30_000);
    return { id, operationId: op.operation!.operationId };
  }

  const task = async (server: PluginServerProcess, id: string) => (await server.get<TaskBody>(`/task/${id}`)).body;

  for (const [who, seconds] of [
    ['the reaping replica 30 s ahead', 30],
    ['the running replica 30 s behind', -30],
  ] as const) {
    it(`${who}: a live task is not failed, and completes as succeeded`, async () => {
      await skew(a, skewA, who.includes('reaping') ? seconds : 0);
      await skew(b, skewB, who.includes('running') ? seconds : 0);
      const { id, operationId } = await post();
      // Long enough for A to judge it several times (its housekeeping runs every 2 s): with the old wall-clock
      // comparison the first pass failed it.
      await sleep(TASK_HEARTBEAT_MS * 4);
      for (const server of [a, b]) expect((await task(server, id)).status.completed, server.httpBase).toBe(false);
      agent.send({ operationResult: resultMessage(operationId, { ok: true, result: null, resourceVersions: {} }) });
      const done = await eventually(
        () => task(a, id),
        (t) => t.status.completed,
        30_000,
      );
      expect(done.status).toMatchObject({ completed: true, failed: false });
    });
  }

  it('a task its replica stopped marking is failed as retryable, and its late result does not flip it', async () => {
    await skew(a, skewA, 0);
    await skew(b, skewB, 0);
    const { id, operationId } = await post();
    process.kill(-b.proc.pid, 'SIGSTOP');
    stack.defer(async () => process.kill(-b.proc.pid, 'SIGCONT'));
    const reaped = await eventually(
      () => task(a, id),
      (t) => t.status.completed,
      TASK_STALE_MS * 4,
    );
    expect(reaped.status).toMatchObject({ completed: true, failed: true, retryable: true });
    process.kill(-b.proc.pid, 'SIGCONT');
    const succeededBefore = await b.metric(
      'scale_agent_plugin_server_operations_total{type="scaleManifest",result="succeeded"}',
    );
    agent.send({ operationResult: resultMessage(operationId, { ok: true, result: null, resourceVersions: {} }) });
    // B has taken the result in: its run of the task finished...
    await eventually(
      () => b.metric('scale_agent_plugin_server_operations_total{type="scaleManifest",result="succeeded"}'),
      (n) => n > succeededBefore,
      30_000,
    );
    // ...and the stored task is still the reaper's outcome, read through either replica (B answers from the store
    // once its run has ended); B's writes of its run's outcome were refused.
    await eventually(
      () => task(b, id),
      (t) => t.status.completed,
      30_000,
    );
    for (const server of [a, b]) {
      expect((await task(server, id)).status, server.httpBase).toMatchObject({ completed: true, failed: true });
    }
    // B did try: its write was refused, and it said so.
    expect(readFileSync(b.logFile, 'utf8')).toContain("task no longer this replica's to write");
  });
});
