/**
 * `npm run faults -- --replicas 3 --agents 2 [--groups 2] [--seeds N | --seed S] [--rows all|id,...]`: the replica
 * half of the fault matrix (bench/faults.ts hands over here when --replicas is given). A replicated install of real
 * processes (test/infra/schedules: a private control plane and MariaDB, Toxiproxy on each replica's MySQL link,
 * libfaketime clocks, HAProxy, agent groups) plays the replica fault rows and/or N randomized seeds, with the
 * ownership checker polling every replica throughout. Prints a markdown table (row or seed → converge time,
 * orphaned-while-served and the other violations, changes lost, operations lost and applied twice), each failing seed
 * with its steps, and last the JSON result. Exit code 1 when anything was violated, lost, duplicated or unconverged.
 */
import { mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  planSchedule,
  REPLICA_FAULT_ROWS,
  ReplicaRig,
  runSchedule,
  type ScheduleResult,
  type ScheduleShape,
} from '../test/infra/schedules/index.js';
import { emit, machineInfo, progress, versions } from './lib/report.js';

export interface ReplicaFaultsOptions {
  replicas: number;
  agents: number;
  groups: number;
  /** Seeds to play (empty: none). */
  seeds: number[];
  /** Fault row ids to play (empty: none). */
  rows: string[];
  durationMs: number;
  leaseSeconds: number;
}

function count(r: ScheduleResult, kind: string): number {
  return r.violations.filter((v) => v.kind === kind).length;
}

export async function runReplicaFaults(o: ReplicaFaultsOptions): Promise<void> {
  const shape: ScheduleShape = {
    replicas: o.replicas,
    groups: o.groups,
    agentsPerGroup: o.agents,
    durationMs: o.durationMs,
    leaseSeconds: o.leaseSeconds,
  };
  const dir = mkdtempSync(join(tmpdir(), 'faults-replicas-'));
  progress(`replicas: starting the rig in ${dir} (${o.replicas} replicas, ${o.groups} groups × ${o.agents} agents)`);
  const rig = await ReplicaRig.start({
    dir,
    replicas: o.replicas,
    controlPlane: 'private',
    mariadb: 'private',
    leaseSeconds: o.leaseSeconds,
    gracePeriodSeconds: 15,
  });
  const results: (ScheduleResult & { load1: number })[] = [];
  const plays = [
    ...REPLICA_FAULT_ROWS.filter((r) => o.rows.includes('all') || o.rows.includes(r.id)).map((r) => ({
      label: r.id,
      seed: 1,
      prefix: r.id.replace(/[^a-z0-9]/g, ''),
      steps: r.steps(1, shape),
    })),
    ...o.seeds.map((seed) => ({ label: `seed ${seed}`, seed, prefix: `s${seed}`, steps: planSchedule(seed, shape) })),
  ];
  try {
    for (const p of plays) {
      progress(p.label);
      const r = await runSchedule(rig, { ...p, shape, log: (l) => progress(`  ${l}`) });
      const load1 = Math.round(loadavg()[0]! * 10) / 10;
      results.push({ ...r, load1 });
      const bad =
        r.violations.length + r.refused.length + r.lostChanges.length + r.ops.lost.length + r.ops.duplicates.length;
      progress(
        `  ${bad || r.convergeMs === null ? 'FAILED' : 'ok'}: converge ${r.convergeMs ?? 'never'} ms, ` +
          `${r.violations.length} violations, ops ${r.ops.posted} (lost ${r.ops.lost.length}, twice ${r.ops.duplicates.length}), load ${load1}`,
      );
      for (const v of r.violations)
        progress(`    ${v.kind} ${v.account} ${v.replica ?? ''} ${v.agent ?? ''}: ${v.detail}`);
    }
  } finally {
    await rig.stop();
  }

  const table = [
    '| run | converge ms | orphaned-while-served | removed-while-served | unserved while refused | two clusters | two writers | neither holder nor standby | dynamic changes refused | changes lost | ops posted | ops lost | applied twice | load (1 min) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...results.map(
      (r) =>
        `| ${r.label} | ${r.convergeMs ?? 'did not converge'} | ${count(r, 'orphaned-while-served')} | ${count(r, 'removed-while-served')} | ${count(r, 'unserved-while-refused')} | ${count(r, 'two-clusters')} | ${count(r, 'two-writers')} | ${count(r, 'neither-holder-nor-standby')} | ${r.refused.length} | ${r.lostChanges.reduce((a, l) => a + Math.max(0, l.missing) + Math.max(0, l.stale), 0)} | ${r.ops.posted} | ${r.ops.lost.length} | ${r.ops.duplicates.length} | ${r.load1} |`,
    ),
  ];
  process.stdout.write(`${table.join('\n')}\n\n`);
  const failed = results.filter(
    (r) =>
      r.violations.length ||
      r.convergeMs === null ||
      r.lostChanges.length ||
      r.ops.lost.length ||
      r.ops.duplicates.length,
  );
  for (const r of failed) {
    process.stdout.write(
      `${r.label} failed (replay: npm run faults -- --replicas ${o.replicas} --agents ${o.agents} --groups ${o.groups} ${r.label.startsWith('seed') ? `--seed ${r.seed}` : `--rows ${r.label}`}):\n` +
        `${r.steps.map((s) => `  ${s}`).join('\n')}\n${r.violations.map((v) => `  ! ${v.kind} ${v.account} ${v.replica ?? ''} ${v.agent ?? ''} for ${v.forMs} ms: ${v.detail}`).join('\n')}\n` +
        `${r.refused.map((n) => `  refused: ${n}`).join('\n')}\n${r.notes.map((n) => `  note: ${n}`).join('\n')}\n\n`,
    );
  }
  const sum = (f: (r: ScheduleResult) => number) => results.reduce((a, r) => a + f(r), 0);
  const figures = {
    runs: results.length,
    orphanedWhileServed: sum((r) => count(r, 'orphaned-while-served')),
    removedWhileServed: sum((r) => count(r, 'removed-while-served')),
    unservedWhileRefused: sum((r) => count(r, 'unserved-while-refused')),
    twoClusters: sum((r) => count(r, 'two-clusters')),
    twoWriters: sum((r) => count(r, 'two-writers')),
    neitherHolderNorStandby: sum((r) => count(r, 'neither-holder-nor-standby')),
    dynamicChangesRefused: sum((r) => r.refused.length),
    changesLost: sum((r) => r.lostChanges.length),
    opsLost: sum((r) => r.ops.lost.length),
    appliedTwice: sum((r) => r.ops.duplicates.length),
    unconverged: results.filter((r) => r.convergeMs === null).map((r) => r.label),
    failedSeeds: failed.filter((r) => r.label.startsWith('seed')).map((r) => r.seed),
    convergeMsMax: Math.max(0, ...results.map((r) => r.convergeMs ?? 0)),
    results,
  };
  emit({
    name: 'faults-replicas',
    params: { ...o },
    machine: machineInfo(),
    versions: versions(),
    figures,
    goal: { orphanedWhileServed: 0, lost: 0, appliedTwice: 0, violations: 0, unconverged: 0 },
    met: failed.length === 0,
    notes: [
      'Every process (three replicas, the agents, HAProxy, Toxiproxy, MariaDB, the control plane, churn) shares this machine; load (1 min) is the load average after each run.',
    ],
  });
  process.exitCode = failed.length === 0 ? 0 : 1;
}
