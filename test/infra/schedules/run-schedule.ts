/**
 * Plays one schedule (schedule.ts) against a ReplicaRig: agents registering in the seeded order, faults injected and
 * lifted on time, dynamic accounts created and deleted on the replicas the plan names, churn and REST operations
 * throughout, the OwnershipChecker watching every replica. Then every fault is lifted, the load stopped, and the run
 * measured: how long until every replica's cache of every account equals the API server (changes lost if never),
 * and whether each operation happened exactly once in the cluster.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { checkCache, waitForCacheToMatch, type CacheDiff } from '../cache-checker.js';
import { OperationsLoad } from '../faults/operations.js';
import { waitFor } from '../wait.js';
import { OwnershipChecker } from './ownership-checker.js';
import type { Violation, World } from './ownership-judge.js';
import type { Replica, ReplicaRig } from './replica-rig.js';
import { describeStep, FAULTS_FROM_MS, type ScheduleShape, type Step } from './schedule.js';

export interface ScheduleResult {
  /** `seed 7`, or a fault row's id. */
  label: string;
  seed: number;
  steps: string[];
  violations: Violation[];
  /** From every fault lifted to every replica's cache equal to the API server; null: not within the timeout. */
  convergeMs: number | null;
  /** Per account and replica, what the cache still got wrong at the timeout (empty when it converged). */
  lostChanges: { account: string; replica: string; missing: number; extra: number; stale: number }[];
  ops: { posted: number; lost: string[]; duplicates: string[]; failed: number };
  /**
   * Dynamic-account changes a replica answered with an error (a delete answered 404 for an account created on a
   * peer): the store is the truth, so any replica must take any change.
   */
  refused: string[];
  /** Steps that could not be carried out (a create sent to a replica that was down, a kill with no holder to kill). */
  notes: string[];
  rounds: number;
}

export interface RunOptions {
  label: string;
  seed: number;
  /** Prefix of this round's account names and agentIds (unique per round on one rig). */
  prefix: string;
  steps: Step[];
  shape: ScheduleShape;
  log?: (line: string) => void;
  convergeTimeoutMs?: number;
}

interface Timed {
  at: number;
  what: string;
  run: () => Promise<(() => Promise<void>) | void>;
}

/** '' when answered 2xx; otherwise the answer (`status` set) or why there was none (a replica down). */
async function answer(res: Promise<Response>): Promise<{ status?: number; text: string }> {
  try {
    const r = await res;
    return r.ok ? { text: '' } : { status: r.status, text: `${r.status} ${(await r.text()).slice(0, 300)}` };
  } catch (e) {
    return { text: (e as Error).message };
  }
}

/** Agents with a stream on some replica (as /armory/agents lists them). */
async function connectedAgents(rig: ReplicaRig): Promise<Set<string>> {
  const out = new Set<string>();
  for (const r of rig.replicas) {
    const res = await fetch(`${r.server.httpBase}/armory/agents`, { signal: AbortSignal.timeout(2_000) }).catch(
      () => undefined,
    );
    if (res?.ok) for (const a of (await res.json()) as { agentId: string }[]) out.add(a.agentId);
  }
  return out;
}

/** The replica whose stream holds `account` (heldBy local), among those that answer. */
async function holderOf(rig: ReplicaRig, account: string): Promise<{ replica?: Replica; agentId?: string }> {
  for (const r of rig.replicas) {
    try {
      const res = await fetch(`${r.server.httpBase}/armory/accounts/${account}`, {
        signal: AbortSignal.timeout(2_000),
      });
      if (!res.ok) continue;
      const v = (await res.json()) as { heldBy?: unknown; agentId?: string };
      if (v.heldBy === 'local') return { replica: r, agentId: v.agentId };
    } catch {
      // not answering: not the holder we can see
    }
  }
  return {};
}

async function whenReady(r: Replica): Promise<void> {
  await waitFor(`${r.name} ready`, async () => (await fetch(`${r.server.httpBase}/readyz`)).ok, 90_000);
}

export async function runSchedule(rig: ReplicaRig, o: RunOptions): Promise<ScheduleResult> {
  const log = o.log ?? (() => undefined);
  const { shape, prefix } = o;
  const account = (g: number) => `${prefix}-g${g}`;
  const agentId = (g: number, m: number) => `${prefix}-g${g}-${m}`;
  const impostorId = `${prefix}-impostor`;
  const impostorStep = o.steps.find((s) => s.do === 'impostor');
  const notes: string[] = [];
  const refused: string[] = [];
  const world: World = {
    groups: Array.from({ length: shape.groups }, (_, g) => ({
      account: account(g),
      agents: Array.from({ length: shape.agentsPerGroup }, (_, m) => agentId(g, m)),
      kubeHost: rig.apiHost,
      ...(impostorStep?.do === 'impostor' && impostorStep.group === g
        ? { impostor: { agentId: impostorId, kubeHost: rig.otherApiHost } }
        : {}),
    })),
    dynamic: new Map(),
    allAgents: Array.from({ length: shape.groups }, (_, g) =>
      Array.from({ length: shape.agentsPerGroup }, (_, m) => agentId(g, m)),
    ).flat(),
  };
  const checker = new OwnershipChecker(rig.replicas, () => world, shape.leaseSeconds, rig.opts.gracePeriodSeconds);
  const ops = new OperationsLoad(rig.lb.httpBase, account(0), rig.namespaces[0]!, 1_000);
  await ops.prepare(rig.kubeConfig());
  const started: string[] = [];

  const restartReplica = async (r: Replica) => {
    r.disturbed = true;
    await r.server.restart();
    r.disturbed = false;
  };

  const act = (s: Step): Timed['run'] => {
    switch (s.do) {
      case 'start-agent':
        return async () => {
          started.push(agentId(s.group, s.member));
          await rig.startAgent({
            agentId: agentId(s.group, s.member),
            account: account(s.group),
            kubeconfigFile: rig.kubeconfig,
          });
        };
      case 'impostor':
        return async () => {
          await rig.startAgent({
            agentId: impostorId,
            account: account(s.group),
            kubeconfigFile: rig.otherClusterKubeconfig,
          });
          return () => rig.stopAgent(impostorId);
        };
      case 'restart-replica':
        return () => restartReplica(rig.replicas[s.replica]!);
      case 'rolling-restart':
        return async () => {
          for (const r of rig.replicas) await restartReplica(r);
        };
      case 'kill-holder-replica':
        return async () => {
          const { replica } = await holderOf(rig, account(s.group));
          if (!replica) {
            notes.push(`${describeStep(s)}: no replica held the account; nothing killed`);
            return;
          }
          log(`  SIGKILL ${replica.name}`);
          replica.disturbed = true;
          await replica.server.kill();
          return () => restartReplica(replica);
        };
      case 'kill-active-agent':
        return async () => {
          const { agentId: active } = await holderOf(rig, account(s.group));
          const agent = active ? rig.agent(active) : undefined;
          if (!agent || active === impostorId) {
            notes.push(`${describeStep(s)}: no agent of the group held the account; nothing killed`);
            return;
          }
          log(`  SIGKILL ${active}`);
          await agent.kill();
          return () => agent.restart(false);
        };
      case 'partition':
        return async () => {
          const r = rig.replicas[s.replica]!;
          r.disturbed = true;
          // Toxiproxy's timeout toxic with timeout 0: every byte dropped, no connection closed, until it is removed.
          for (const stream of ['upstream', 'downstream'] as const) {
            await rig.toxiproxy.addToxic(r.link, `partition-${stream}`, stream, {
              type: 'timeout',
              attributes: { timeout: 0 },
            });
          }
          return async () => {
            for (const stream of ['upstream', 'downstream'] as const)
              await rig.toxiproxy.removeToxic(r.link, `partition-${stream}`);
            await whenReady(r);
            r.disturbed = false;
          };
        };
      case 'skew':
        return async () => {
          const r = rig.replicas[s.replica]!;
          r.skew.set(s.seconds);
          return async () => r.skew.set(0);
        };
      case 'create-dynamic':
        return async () => {
          const r = rig.replicas[s.replica]!;
          const body = {
            name: s.name,
            kubeconfigFile: rig.kubeconfig,
            namespaces: [rig.namespaces[0]!],
            kinds: ['ConfigMap'],
          };
          const a = await answer(
            fetch(`${r.server.httpBase}/armory/accounts/dynamic`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(body),
              signal: AbortSignal.timeout(5_000),
            }),
          );
          if (!a.text) world.dynamic.set(s.name, Date.now());
          else (a.status ? refused : notes).push(`${describeStep(s)}: ${a.text}`);
        };
      case 'delete-dynamic':
        return async () => {
          const r = rig.replicas[s.replica]!;
          // No longer owed to anyone from the moment the delete is sent.
          world.dynamic.delete(s.name);
          const a = await answer(
            fetch(`${r.server.httpBase}/armory/accounts/${s.name}`, {
              method: 'DELETE',
              signal: AbortSignal.timeout(5_000),
            }),
          );
          if (a.text) (a.status ? refused : notes).push(`${describeStep(s)}: ${a.text}`);
        };
    }
  };

  const queue: Timed[] = o.steps.map((s) => ({ at: s.at, what: describeStep(s), run: act(s) }));
  const holds = new Map(o.steps.map((s, i) => [queue[i]!, 'holdMs' in s ? s.holdMs : 0]));
  checker.start();
  rig.churn.start();
  let t0 = Date.now();
  let opsStarted = false;
  try {
    while (queue.length) {
      queue.sort((a, b) => a.at - b.at);
      const next = queue.shift()!;
      if (!opsStarted && next.at >= FAULTS_FROM_MS) {
        // The faults begin once every agent started so far has a stream (starting a Node process takes seconds on a
        // loaded machine): the schedule's times after this point count from here, so a kill finds its holder.
        const want = started.filter((id) => id !== impostorId);
        await waitFor(
          'every agent connected',
          async () => {
            const c = await connectedAgents(rig);
            return want.every((id) => c.has(id));
          },
          90_000,
        ).catch(() => notes.push(`not every agent connected within 90 s of the start: ${want.join(', ')}`));
        t0 = Math.max(t0, Date.now() - FAULTS_FROM_MS);
        // Operations start now too (until an agent holds the account they are refused).
        ops.start();
        opsStarted = true;
      }
      const wait = t0 + next.at - Date.now();
      if (wait > 0) await sleep(wait);
      log(`${next.what}`);
      try {
        const lift = await next.run();
        if (lift) {
          const hold = holds.get(next) ?? 0;
          queue.push({ at: Date.now() - t0 + hold, what: `  lifted: ${next.what.trim()}`, run: async () => lift() });
        }
      } catch (e) {
        notes.push(`${next.what}: ${(e as Error).message.split('\n')[0]}`);
      }
    }
  } finally {
    // Everything back: links, clocks, processes, the impostor gone.
    await rig.toxiproxy.reset().catch(() => undefined);
    for (const r of rig.replicas) {
      r.skew.set(0);
      if (!r.server.proc.running) await restartReplica(r).catch((e: unknown) => notes.push(`${r.name}: ${String(e)}`));
    }
    for (const r of rig.replicas) await whenReady(r).catch((e: unknown) => notes.push(String(e)));
    for (const r of rig.replicas) r.disturbed = false;
    await rig.stopAgent(impostorId);
    for (const id of started) {
      const a = rig.agent(id);
      if (a && !a.proc.running) await a.restart(false);
    }
  }
  if (!opsStarted) ops.start();
  // Let the load run a moment on the healed install, then hold the world still and measure convergence.
  await sleep(1_000);
  await Promise.all([rig.churn.stop(), ops.stop()]);
  const healed = Date.now();
  const lostChanges: ScheduleResult['lostChanges'] = [];
  let convergeMs: number | null = null;
  const timeout = o.convergeTimeoutMs ?? 90_000;
  const results = await Promise.all(
    world.groups.flatMap((g) =>
      rig.replicas.map(async (r) => {
        try {
          await waitForCacheToMatch(rig.checkOptions(r, g.account), Math.max(1_000, healed + timeout - Date.now()));
          return true;
        } catch {
          const d: CacheDiff | undefined = await checkCache(rig.checkOptions(r, g.account)).catch(() => undefined);
          lostChanges.push({
            account: g.account,
            replica: r.name,
            missing: d?.missing.length ?? -1,
            extra: d?.extra.length ?? -1,
            stale: d?.stale.length ?? -1,
          });
          return false;
        }
      }),
    ),
  );
  if (results.every(Boolean)) convergeMs = Date.now() - healed;
  const report = await ops.settle(rig.kubeConfig(), 120_000);
  await checker.stop();
  // This round's agents and dynamic accounts go; its static accounts are orphaned and removed after the grace period.
  for (const id of started) await rig.stopAgent(id);
  for (const name of world.dynamic.keys()) {
    await answer(fetch(`${rig.lb.httpBase}/armory/accounts/${name}`, { method: 'DELETE' }));
  }
  return {
    label: o.label,
    seed: o.seed,
    steps: o.steps.map(describeStep),
    violations: checker.judge.violations,
    convergeMs,
    lostChanges,
    ops: { posted: report.posted, lost: report.lost, duplicates: report.duplicates, failed: report.failed.length },
    refused,
    notes,
    rounds: checker.judge.rounds,
  };
}
