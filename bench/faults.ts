/**
 * `npm run faults [-- --repeat N] [--store memory|mysql|postgres|both|all] [--only id,prefix,...]`: the fault matrix
 * (test/infra/faults/catalogue.ts) against real processes: a private control plane, a private MariaDB on a tmpfs
 * (when this machine lets us mount one), Toxiproxy on every link, churn and REST operations running through each
 * fault. Prints a markdown table (fault × component/link → time to converge, ops lost, duplicates) and, last, the
 * JSON result. Exit code 1 when any fault lost or duplicated an operation or did not converge.
 *
 * The memory store runs the faults where the store matters (plugin-server, agent, the gRPC link); the MySQL store
 * runs all of them; the PostgreSQL store (a server of the rig's own, durable) all but MariaDB's own process and disk
 * faults, with its own server's SIGKILL and SIGSTOP instead.
 *
 * `npm run faults -- --replicas 3 --agents 2 [--groups 2] [--seeds N | --seed S] [--rows all|id,...]`: the replica
 * rows and randomized schedules instead (bench/faults-replicas.ts).
 */
import { mkdtempSync } from 'node:fs';
import { machine, tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_ALLOCATOR_ENV } from '../src/compiler/runtimes.js';
import { run } from '../test/infra/exec.js';
import {
  FAULTS,
  FaultRig,
  Load,
  runFault,
  type Fault,
  type FaultResult,
  type ProcessSample,
} from '../test/infra/faults/index.js';
import { runReplicaFaults } from './faults-replicas.js';
import { emit, flags, machineInfo, progress, versions } from './lib/report.js';

const f = flags({
  repeat: { type: 'string', default: '1' },
  store: { type: 'string', default: 'both' },
  only: { type: 'string' },
  'tmpfs-mb': { type: 'string', default: '512' },
  // The agent's allocator: 'glibc' (the process as started, earlier runs) or 'shipped' (jemalloc and MALLOC_CONF as
  // the image and chart set them, AGENT_ALLOCATOR_ENV, with Debian's library path).
  'agent-allocator': { type: 'string', default: 'glibc' },
  jemalloc: { type: 'string', default: `/usr/lib/${machine()}-linux-gnu/libjemalloc.so.2` },
  // NODE_OPTIONS for the agent, e.g. --max-semi-space-size=8.
  'agent-node-options': { type: 'string' },
  // Replicated installs (bench/faults-replicas.ts): replicas, agents per group, groups, seeds and fault rows.
  replicas: { type: 'string' },
  agents: { type: 'string', default: '2' },
  groups: { type: 'string', default: '2' },
  seeds: { type: 'string' },
  seed: { type: 'string' },
  'first-seed': { type: 'string', default: '1' },
  rows: { type: 'string' },
  'duration-ms': { type: 'string', default: '15000' },
  'lease-seconds': { type: 'string', default: '3' },
});
if (f.replicas !== undefined) {
  const first = Number(f['first-seed']);
  const seeds = f.seed
    ? String(f.seed).split(',').map(Number)
    : Array.from({ length: Number(f.seeds ?? (f.rows ? 0 : 10)) }, (_, i) => first + i);
  if (!seeds.every(Number.isInteger)) throw new Error('--seed/--seeds/--first-seed: integers');
  await runReplicaFaults({
    replicas: Number(f.replicas),
    agents: Number(f.agents),
    groups: Number(f.groups),
    seeds,
    rows: f.rows ? String(f.rows).split(',') : [],
    durationMs: Number(f['duration-ms']),
    leaseSeconds: Number(f['lease-seconds']),
  });
  process.exit();
}
const repeat = Math.max(1, Number(f.repeat));
type Store = 'memory' | 'mysql' | 'postgres';
const stores: Store[] =
  f.store === 'both' ? ['memory', 'mysql'] : f.store === 'all' ? ['memory', 'mysql', 'postgres'] : [f.store as Store];
if (!stores.every((s) => ['memory', 'mysql', 'postgres'].includes(s))) {
  throw new Error('--store: memory, mysql, postgres, both (memory and mysql) or all');
}
const only = f.only ? String(f.only).split(',') : undefined;
const agentEnv: Record<string, string> = {};
if (f['agent-allocator'] === 'shipped') {
  for (const e of AGENT_ALLOCATOR_ENV) agentEnv[e.name] = e.name === 'LD_PRELOAD' ? String(f.jemalloc) : e.value;
} else if (f['agent-allocator'] !== 'glibc') throw new Error('--agent-allocator: glibc or shipped');
if (f['agent-node-options']) agentEnv.NODE_OPTIONS = String(f['agent-node-options']);

/** Whether a tmpfs can be mounted here (root, or a container with CAP_SYS_ADMIN). */
async function canMountTmpfs(): Promise<boolean> {
  const dir = mkdtempSync(join(tmpdir(), 'faults-mount-check-'));
  const r = await run('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { allowFail: true });
  if (r.code === 0) await run('umount', [dir], { allowFail: true });
  return r.code === 0;
}

function selected(store: Store, tmpfs: boolean): Fault[] {
  return FAULTS.filter((x) => {
    if (only && !only.some((o) => x.id === o || x.id.startsWith(o))) return false;
    if (x.needs.tmpfs && !tmpfs) return false;
    if (store === 'memory') {
      return (
        !x.needs.mysql && !x.needs.postgres && ['agent', 'plugin-server', 'agent ↔ plugin-server'].includes(x.target)
      );
    }
    // Each SQL store's rig has its own database link and server; the other store's faults do not apply.
    if (store === 'mysql') return !x.needs.postgres;
    return (
      !x.needs.mysql &&
      !x.needs.privateMariadb &&
      !(x.needs.privatePostgres && process.env.SCALE_AGENT_TEST_POSTGRES_URL)
    );
  });
}

interface Row extends FaultResult {
  store: string;
  repetition: number;
  error?: string;
}

/** Growth of a process's RSS and descriptors from its first to its last sample (same pid: not restarted). */
function growth(samples: { pid: number; sample: ProcessSample }[]) {
  const last = samples.at(-1);
  if (!last) return undefined;
  const same = samples.filter((s) => s.pid === last.pid);
  const first = same[0]!;
  return {
    samples: same.length,
    rssKbFirst: first.sample.rssKb,
    rssKbLast: last.sample.rssKb,
    rssGrowth: Math.round((last.sample.rssKb / first.sample.rssKb - 1) * 1000) / 1000,
    fdsFirst: first.sample.fds,
    fdsLast: last.sample.fds,
    cpuSeconds: Math.round((last.sample.cpuSeconds - first.sample.cpuSeconds) * 10) / 10,
    heapUsedKbFirst: first.sample.heap?.usedKb,
    heapUsedKbLast: last.sample.heap?.usedKb,
    externalKbFirst: first.sample.heap?.externalKb,
    externalKbLast: last.sample.heap?.externalKb,
  };
}

const tmpfs = await canMountTmpfs();
const notes: string[] = [];
if (!tmpfs) notes.push('disk-full:mariadb skipped: this machine does not allow mounting a tmpfs');
const rows: Row[] = [];
const processSeries: Record<string, Record<string, { pid: number; sample: ProcessSample }[]>> = {};

for (const store of stores) {
  const faults = selected(store, tmpfs);
  if (!faults.length) continue;
  const dir = mkdtempSync(join(tmpdir(), `faults-${store}-`));
  progress(`${store}: starting the rig in ${dir} (${faults.length} faults × ${repeat})`);
  const rig = await FaultRig.start({
    dir,
    store,
    controlPlane: 'private',
    mariadb: 'private',
    mariadbTmpfsMb: store === 'mysql' && tmpfs ? Number(f['tmpfs-mb']) : undefined,
    agentEnv,
  });
  const series: Record<string, { pid: number; sample: ProcessSample }[]> = (processSeries[store] = {});
  try {
    const load = await Load.create(rig);
    await rig.converge();
    for (let r = 1; r <= repeat; r++) {
      for (const fault of faults) {
        progress(`${store} #${r} ${fault.id}`);
        let row: Row;
        try {
          row = { store, repetition: r, ...(await runFault(rig, load, fault)) };
        } catch (e) {
          // Leave the rig usable for the next fault: lift whatever may still hold, then record the failure.
          await fault.recover(rig).catch(() => undefined);
          await rig.toxiproxy.reset().catch(() => undefined);
          row = {
            store,
            repetition: r,
            id: fault.id,
            fault: fault.fault,
            target: fault.target,
            recoverMs: NaN,
            convergeMs: NaN,
            diff: { equal: false, missing: [], extra: [], stale: [], compared: 0 },
            during: { readyz: 0, read: 0 },
            churn: { writes: 0, failed: 0 },
            ops: {
              posted: 0,
              outcomes: { succeeded: 0, 'failed-retryable': 0, failed: 0, rejected: 0, stuck: 0, unaccepted: 0 },
              resumed: 0,
              lost: [],
              duplicates: [],
              failed: [],
              refusedUnknownAccount: 0,
              configMaps: [],
              appends: [],
            },
            processes: {},
            error: (e as Error).message.slice(0, 2_000),
          };
        }
        progress(
          `  converge ${row.convergeMs} ms, ops ${row.ops.posted} (lost ${row.ops.lost.length}, dup ${row.ops.duplicates.length})${row.error ? ` ERROR ${row.error.slice(0, 300)}` : ''}`,
        );
        if (row.bite) progress(`  ${row.bite.bit ? 'bit' : 'DID NOT BITE'}: ${row.bite.note}`);
        const a = row.processes.agent;
        if (a?.heap)
          progress(
            `  agent RSS ${Math.round(a.rssKb / 1024)} MB, heap used ${Math.round(a.heap.usedKb / 1024)} of ${Math.round(a.heap.totalKb / 1024)} MB (new space ${Math.round(a.heap.newSpaceTotalKb / 1024)}), external ${Math.round(a.heap.externalKb / 1024)} MB, CPU ${a.cpuSeconds} s`,
          );
        rows.push(row);
        const pids = rig.pids();
        for (const [name, sample] of Object.entries(row.processes)) {
          if (sample) (series[name] ??= []).push({ pid: pids[name] ?? -1, sample });
        }
      }
    }
  } finally {
    await rig.stop();
  }
}

// One line per fault (worst repetition).
const byFault = new Map<string, Row[]>();
for (const r of rows) byFault.set(`${r.store} ${r.id}`, [...(byFault.get(`${r.store} ${r.id}`) ?? []), r]);
const table = [
  '| store | fault | component / link | converge ms (max) | ops posted | lost | duplicates | failed (final) | ready during | reads during |',
  '|---|---|---|---|---|---|---|---|---|---|',
];
for (const rs of byFault.values()) {
  const r0 = rs[0]!;
  const failed = rs.some((r) => r.error);
  table.push(
    `| ${r0.store} | ${r0.fault} | ${r0.target} | ${failed ? 'did not converge' : Math.max(...rs.map((r) => r.convergeMs))} | ${rs.reduce((a, r) => a + r.ops.posted, 0)} | ${rs.reduce((a, r) => a + r.ops.lost.length, 0)} | ${rs.reduce((a, r) => a + r.ops.duplicates.length, 0)} | ${rs.reduce((a, r) => a + r.ops.failed.length, 0)} | ${[...new Set(rs.map((r) => r.during.readyz))].join('/')} | ${[...new Set(rs.map((r) => r.during.read))].join('/')} |`,
  );
}
process.stdout.write(`${table.join('\n')}\n\n`);
// Faults that check themselves (Fault.observe): whether each repetition bit, and the evidence.
for (const r of rows.filter((x) => x.bite)) {
  const line = `${r.store} #${r.repetition} ${r.id}: ${r.bite!.bit ? '' : 'DID NOT BITE: '}${r.bite!.note}`;
  notes.push(line);
  process.stdout.write(`${line}\n`);
}

const lost = rows.reduce((a, r) => a + r.ops.lost.length, 0);
const duplicates = rows.reduce((a, r) => a + r.ops.duplicates.length, 0);
const unconverged = rows.filter((r) => r.error).map((r) => `${r.store} ${r.id}: ${r.error}`);
const processes = Object.fromEntries(
  Object.entries(processSeries).map(([store, s]) => [
    store,
    Object.fromEntries(Object.entries(s).map(([n, samples]) => [n, growth(samples)])),
  ]),
);
emit({
  name: 'faults',
  params: { repeat, stores, only: only ?? 'all', tmpfs, agentEnv },
  machine: machineInfo(),
  versions: versions(),
  figures: {
    faults: rows.length,
    lost,
    duplicates,
    unconverged,
    convergeMsMax: Math.max(0, ...rows.filter((r) => !r.error).map((r) => r.convergeMs)),
    processes,
    results: rows,
  },
  goal: { lost: 0, duplicates: 0, unconverged: 0 },
  met: lost === 0 && duplicates === 0 && unconverged.length === 0,
  notes,
});
process.exitCode = lost === 0 && duplicates === 0 && unconverged.length === 0 ? 0 : 1;
