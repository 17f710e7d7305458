/**
 * What the plugin-server costs, per store: CPU time per 1,000 changes streamed in steady state, CPU time per 1,000
 * objects of an initial sync, and memory per cached object — the figures a user sizes a deployment by. A fleet of
 * fake agents (the real protocol, bench/fake-agents) syncs its objects, then streams changes at a steady rate, into
 * the real plugin-server (memory store, then MySQL store on a private MariaDB), and, as the baseline of the same run,
 * into a bare grpc-js server that decodes and stores nothing (bench/lib/raw-server.ts). CPU is the processes' own
 * user+system time from /proc, so it does not depend on how loaded the machine is the way wall time does; MariaDB's
 * CPU is counted beside the plugin-server's for the MySQL store.
 *
 *   npx tsx bench/cost.ts [--quick] [--agents 20] [--objects 5000] [--rate 200] [--duration 15]
 *                         [--stores memory,mysql]
 */
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import mysql, { type RowDataPacket } from 'mysql2/promise';
import { MariaDb, createDatabase } from '../test/infra/mariadb.js';
import { runFleet, type FleetReport } from './fake-agents/fleet.js';
import { procStats, startScript } from './lib/child.js';
import { startPluginServer } from './lib/plugin-server.js';
import { emit, flags, machineInfo, progress, versions } from './lib/report.js';

const f = flags({
  agents: { type: 'string', default: '20' },
  objects: { type: 'string', default: '5000' },
  rate: { type: 'string', default: '200' },
  duration: { type: 'string', default: '15' },
  stores: { type: 'string', default: 'memory,mysql' },
});
const AGENTS = f.quick ? 4 : Number(f.agents);
const OBJECTS = f.quick ? 500 : Number(f.objects);
const RATE = f.quick ? 100 : Number(f.rate);
const DURATION = f.quick ? 3 : Number(f.duration);
const OBJECT_BYTES = 1024;
const stores = String(f.stores).split(',') as ('memory' | 'mysql')[];

interface Sample {
  cpuMs: number;
  rssBytes: number;
}

/** CPU and RSS of a set of processes (the server, and MariaDB beside it), summed. */
async function sample(pids: number[]): Promise<Sample> {
  const all = await Promise.all(pids.map((p) => procStats(p)));
  return { cpuMs: all.reduce((n, s) => n + s.cpuMs, 0), rssBytes: all.reduce((n, s) => n + s.rssBytes, 0) };
}

interface Cost {
  syncedObjects: number;
  steadyChanges: number;
  steadyChangesPerSec: number;
  /** CPU ms of the server (and MariaDB) per 1,000 objects of the initial sync, connect included. */
  cpuMsPer1000Synced: number;
  /** CPU ms per 1,000 changes in steady state. */
  cpuMsPer1000Changes: number;
  /**
   * RSS growth from before the fleet connected to the end of the steady phase, per object synced. For the memory
   * store, what an object costs (GC slack included); for the MySQL store, the sync's working set spread over them.
   */
  rssBytesPerObject: number;
  rssBytes: { idle: number; synced: number; end: number };
  /** A steady batch's send → ack time at the fake agents (applied to the store, and for MySQL committed). */
  ackMs: { p50: number; p99: number };
  errors: string[];
  /** The MySQL store only: the cache's tables on disk (data + indexes) per object, and MariaDB's share of the CPU. */
  mysql?: { diskBytesPerObject: number; mariadbCpuMsPer1000Changes?: number };
}

async function measure(
  address: string,
  pids: number[],
  idPrefix: string,
  extra?: { mariadbPid?: number },
): Promise<{ cost: Cost; report: FleetReport }> {
  await sleep(1000); // the server's start-up work (JIT, first timers) out of the idle sample
  const idle = await sample(pids);
  let synced!: Sample;
  let syncedAtUs = 0;
  let mariaSynced: Sample | undefined;
  const report = await runFleet({
    address,
    agents: AGENTS,
    accountsPerAgent: 1,
    objectsPerAccount: OBJECTS,
    objectBytes: OBJECT_BYTES,
    batchSize: 500,
    changesPerSecPerAgent: RATE,
    steadySeconds: DURATION,
    wave: 20,
    idPrefix,
    onSynced: async () => {
      syncedAtUs = monotonicUs();
      synced = await sample(pids);
      if (extra?.mariadbPid) mariaSynced = await sample([extra.mariadbPid]);
    },
  });
  const end = await sample(pids);
  // The steady phase's bounds in the clock V8 stamps profile samples with, for bench/lib/profile-summary.ts.
  progress(
    `${idPrefix}: steady phase ${syncedAtUs}..${monotonicUs()} µs (monotonic), ${report.steady.sentChanges} changes`,
  );
  const mariaEnd = extra?.mariadbPid ? await sample([extra.mariadbPid]) : undefined;
  for (const a of report.agentsHandle) a.close();
  const objects = report.syncedObjects;
  const changes = report.steady.sentChanges;
  return {
    report,
    cost: {
      syncedObjects: objects,
      steadyChanges: changes,
      steadyChangesPerSec: Math.round(report.steady.sentChangesPerSec),
      cpuMsPer1000Synced: round(((synced.cpuMs - idle.cpuMs) / objects) * 1000),
      cpuMsPer1000Changes: round(((end.cpuMs - synced.cpuMs) / changes) * 1000),
      rssBytesPerObject: Math.round((end.rssBytes - idle.rssBytes) / objects),
      rssBytes: { idle: idle.rssBytes, synced: synced.rssBytes, end: end.rssBytes },
      ackMs: { p50: report.ackLatencyMs.p50, p99: report.ackLatencyMs.p99 },
      errors: report.errors,
      ...(extra
        ? {
            mysql: {
              diskBytesPerObject: 0,
              ...(mariaSynced && mariaEnd
                ? { mariadbCpuMsPer1000Changes: round(((mariaEnd.cpuMs - mariaSynced.cpuMs) / changes) * 1000) }
                : {}),
            },
          }
        : {}),
    },
  };
}

function monotonicUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

function round(n: number): number {
  return Math.round(n * 100) / 100;
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

const figures: Record<string, Cost> = {};

// Baseline: the bare transport, same fleet, same bytes.
{
  progress(`baseline: bare grpc-js server, ${AGENTS} agents × ${OBJECTS} objects, ${RATE} changes/s each`);
  const raw = await startScript('bench/lib/raw-server-main.ts');
  const { cost } = await measure(raw.line, [raw.child.pid!], 'rawcost');
  figures.bareGrpc = cost;
  await stop(raw.child);
}

let mariadb: MariaDb | undefined;
try {
  for (const store of stores) {
    progress(`${store} store: ${AGENTS} agents × ${OBJECTS} objects, ${RATE} changes/s each for ${DURATION} s`);
    let url: string | undefined;
    let dropDatabase: (() => Promise<void>) | undefined;
    let storage: Record<string, unknown> = { type: 'memory' };
    if (store === 'mysql') {
      // The test run's MariaDB when there is one (the suite's smoke run: MariaDB's CPU is not counted then, the
      // server being shared), else a private one whose CPU is measured beside the plugin-server's.
      const shared = process.env.SCALE_AGENT_TEST_MYSQL_URL;
      if (!shared) mariadb ??= await MariaDb.start({ log: (l) => progress(l) });
      const db = await createDatabase(shared ?? mariadb!.url, 'bench_cost');
      dropDatabase = db.drop;
      url = db.url;
      storage = { type: 'mysql', url };
    }
    const ps = await startPluginServer(storage);
    try {
      const { cost } = await measure(
        ps.grpcAddress,
        [ps.child.pid!],
        `${store}cost`,
        store === 'mysql' ? { mariadbPid: mariadb?.pid } : undefined,
      );
      if (url && cost.mysql) {
        const conn = await mysql.createConnection(url);
        try {
          await conn.query('ANALYZE TABLE sa_objects');
          const [rows] = await conn.query<RowDataPacket[]>(
            'SELECT data_length + index_length AS bytes FROM information_schema.TABLES ' +
              "WHERE table_schema = DATABASE() AND table_name = 'sa_objects'",
          );
          cost.mysql.diskBytesPerObject = Math.round(Number(rows[0]?.bytes ?? 0) / cost.syncedObjects);
        } finally {
          await conn.end();
        }
      }
      figures[store] = cost;
      progress(
        `${store}: ${cost.cpuMsPer1000Changes} CPU ms per 1,000 changes, ${cost.cpuMsPer1000Synced} per 1,000 synced, ` +
          `${cost.rssBytesPerObject} B RSS per object`,
      );
    } finally {
      await ps.stop();
      await dropDatabase?.();
    }
  }
} finally {
  await mariadb?.stop();
}

const bare = figures.bareGrpc!;
const ratios = Object.fromEntries(
  stores
    .filter((s) => figures[s])
    .map((s) => {
      const c = figures[s]!;
      const mariadbCpu = c.mysql?.mariadbCpuMsPer1000Changes;
      return [
        s,
        {
          cpuPerChangeToBare: round(c.cpuMsPer1000Changes / bare.cpuMsPer1000Changes),
          ...(mariadbCpu !== undefined
            ? { cpuPerChangeWithDatabaseToBare: round((c.cpuMsPer1000Changes + mariadbCpu) / bare.cpuMsPer1000Changes) }
            : {}),
          cpuPerSyncedObjectToBare: round(c.cpuMsPer1000Synced / bare.cpuMsPer1000Synced),
          rssPerObjectToObjectBytes: round(c.rssBytesPerObject / OBJECT_BYTES),
        },
      ];
    }),
);

/**
 * What one replica holds, from the figures above: changes per second per core at 70 % CPU, and objects per GiB of
 * memory (memory store) — the arithmetic docs/operations.md's sizing section does by hand.
 */
const capacity = Object.fromEntries(
  stores
    .filter((s) => figures[s])
    .map((s) => {
      const c = figures[s]!;
      return [
        s,
        {
          changesPerSecPerCoreAt70Percent: Math.round((0.7 * 1_000_000) / c.cpuMsPer1000Changes),
          ...(c.mysql
            ? { databaseDiskGiBPerMillionObjects: round((c.mysql.diskBytesPerObject * 1_000_000) / 2 ** 30) }
            : {}),
          ...(c.mysql?.mariadbCpuMsPer1000Changes !== undefined
            ? {
                databaseChangesPerSecPerCoreAt70Percent: Math.round(
                  (0.7 * 1_000_000) / Math.max(0.01, c.mysql.mariadbCpuMsPer1000Changes),
                ),
              }
            : {}),
          // The memory store holds the objects; the MySQL store's RSS is the sync's working set, not per object.
          ...(s === 'memory' ? { objectsPerGiB: Math.round(2 ** 30 / Math.max(1, c.rssBytesPerObject)) } : {}),
        },
      ];
    }),
);

const errors = Object.values(figures).flatMap((c) => c.errors);
emit({
  name: 'cost',
  params: {
    agents: AGENTS,
    objectsPerAgent: OBJECTS,
    objectBytes: OBJECT_BYTES,
    changesPerSecPerAgent: RATE,
    steadySeconds: DURATION,
    stores,
    quick: f.quick,
  },
  machine: machineInfo(),
  versions: versions(),
  figures: { ...figures, ratios, capacity },
  baseline: { bareGrpc: bare },
  goal: { description: 'reported, not judged: the cost figures a deployment is sized by', noErrors: true },
  met: errors.length === 0,
  notes: f.quick ? ['quick mode: a small fleet; the per-object figures carry more of the fixed start-up cost'] : [],
});
process.exit(0);
