/**
 * The MySQL store at millions of cached objects (DESIGN §8 asks for 10 M; this machine's time and disk hold a few):
 * simulated agents speaking the real protocol sync blocks of 1,000 accounts × 1,000 Spinnaker-shaped objects into
 * the real plugin-server on MariaDB, and after each stage (1 M, 3 M objects by default) the bench measures the
 * initial sync rate of the stage's new objects, `GET /manifests/...` and `/applications/{app}/serverGroups?expand=true`
 * (one application of 100 server groups, the same answer at every stage) p50/p99, and the tables' data and index
 * bytes from information_schema. Baseline: the first stage of the same run; ratios say how each figure grows.
 *
 *   npm run build && npx tsx bench/mysql-scale.ts [--quick] [--stages 1000,3000] [--samples 50]
 *
 * Long (about 20 minutes for 3 M here) and opt-in: `npm run bench` runs it only with `--only mysql-scale`.
 */
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mysql2/promise';
import { FakeAgent } from './fake-agents/fake-agent.js';
import { procStats } from './lib/child.js';
import { startPluginServer } from './lib/plugin-server.js';
import { distribution, emit, flags, machineInfo, progress, versions, type Distribution } from './lib/report.js';
import { SpinnakerWorkload } from './lib/spinnaker-workload.js';
import { createDatabase, MariaDb } from '../test/infra/mariadb.js';

const f = flags({ stages: { type: 'string', default: '1000,3000' }, samples: { type: 'string', default: '50' } });
/** Accounts after each stage (1,000 objects each). */
const STAGES = f.quick ? [20, 60] : String(f.stages).split(',').map(Number);
const SAMPLES = f.quick ? 10 : Number(f.samples);
const OBJECTS_PER_ACCOUNT = 1000;
const ACCOUNTS_PER_AGENT = 100;
/** Agents syncing at once: enough to keep the server busy, few enough that their encoded syncs fit in memory. */
const CONCURRENT_SYNCS = 4;
const BLOCK = STAGES[0]!;
const WORKLOAD = new SpinnakerWorkload(BLOCK, OBJECTS_PER_ACCOUNT);

async function sample(url: string, check: (body: unknown) => void): Promise<Distribution> {
  const first = await fetch(url);
  if (first.status !== 200) throw new Error(`${url}: HTTP ${first.status} ${(await first.text()).slice(0, 200)}`);
  check(await first.json());
  const out: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = performance.now();
    const res = await fetch(url);
    await res.arrayBuffer();
    out.push(performance.now() - t0);
  }
  return distribution(out);
}

interface TableSize {
  rows: number;
  dataBytes: number;
  indexBytes: number;
}

/** Data and index bytes per table as InnoDB reports them, after ANALYZE so the statistics are current. */
async function tableSizes(url: string, database: string): Promise<Record<string, TableSize>> {
  const conn = await createConnection(url);
  try {
    const [tables] = await conn.query<import('mysql2').RowDataPacket[]>(
      'SELECT table_name AS t FROM information_schema.tables WHERE table_schema = ?',
      [database],
    );
    for (const { t } of tables) await conn.query(`ANALYZE TABLE \`${String(t)}\``);
    const [rows] = await conn.query<import('mysql2').RowDataPacket[]>(
      'SELECT table_name AS t, table_rows AS r, data_length AS d, index_length AS i FROM information_schema.tables ' +
        'WHERE table_schema = ? ORDER BY data_length + index_length DESC',
      [database],
    );
    const out: Record<string, TableSize> = {};
    for (const r of rows) out[String(r.t)] = { rows: Number(r.r), dataBytes: Number(r.d), indexBytes: Number(r.i) };
    return out;
  } finally {
    await conn.end();
  }
}

const mariadb = process.env.SCALE_AGENT_TEST_MYSQL_URL ? undefined : await MariaDb.start({ log: () => undefined });
const db = await createDatabase(process.env.SCALE_AGENT_TEST_MYSQL_URL ?? mariadb!.url, 'bench_scale');
const ps = await startPluginServer({ type: 'mysql', url: db.url });
const agents: FakeAgent[] = [];
const stages: Record<string, unknown>[] = [];
try {
  let accounts = 0;
  for (const target of STAGES) {
    const added: FakeAgent[] = [];
    for (; accounts < target; accounts += ACCOUNTS_PER_AGENT) {
      const agent = new FakeAgent({
        address: ps.grpcAddress,
        agentId: `scale-${agents.length}`,
        accounts: Math.min(ACCOUNTS_PER_AGENT, target - accounts),
        objectsPerAccount: OBJECTS_PER_ACCOUNT,
        objectBytes: 600,
        batchSize: 500,
        workload: (a) => WORKLOAD.objects(a),
        heartbeatMs: 10_000,
      });
      agents.push(agent);
      added.push(agent);
    }
    accounts = target;
    for (const a of added) for (const name of a.accountNames) WORKLOAD.indexOf(name);
    progress(`stage ${target} accounts: syncing ${added.length} agents (${CONCURRENT_SYNCS} at once)`);
    const t0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENT_SYNCS }, async () => {
        while (next < added.length) {
          const agent = added[next++]!;
          await agent.connect();
          await agent.sync();
          progress(`  ${agent.accountNames.length} accounts of ${agent.accountNames[0]} synced`);
        }
      }),
    );
    const syncMs = performance.now() - t0;
    const objects = added.reduce((n, a) => n + a.stats.sentChanges, 0);
    const first = agents[0]!.accountNames[0]!;
    const newest = added.at(-1)!.accountNames.at(-1)!;
    progress(`stage ${target}: ${objects} objects in ${Math.round(syncMs / 1000)} s; reading`);
    // What the server spends with nothing to do but keep this many accounts (lease renewals, replica view):
    // a read's latency includes waiting for it.
    const idle0 = await procStats(ps.child.pid!);
    await sleep(10_000);
    const idle1 = await procStats(ps.child.pid!);
    const idleCpuShare = Math.round(((idle1.cpuMs - idle0.cpuMs) / 10_000) * 100) / 100;
    const manifestFirst = await sample(
      `${ps.httpUrl}/manifests/${first}/bench/${encodeURIComponent('configMap cm-999')}`,
      () => {},
    );
    const manifestNewest = await sample(
      `${ps.httpUrl}/manifests/${newest}/bench/${encodeURIComponent('configMap cm-999')}`,
      () => {},
    );
    const serverGroups = await sample(`${ps.httpUrl}/applications/app0/serverGroups?expand=true`, (b) => {
      const rows = b as { instances: unknown[] }[];
      if (rows.length !== Math.min(100, BLOCK)) throw new Error(`expected 100 server groups, got ${rows.length}`);
      if (rows.some((r) => r.instances.length !== 2)) throw new Error('a server group lacks its 2 instances');
    });
    const tables = await tableSizes(db.url, db.database);
    const total = Object.values(tables).reduce((n, t) => n + t.dataBytes + t.indexBytes, 0);
    const cached = target * OBJECTS_PER_ACCOUNT;
    stages.push({
      accounts: target,
      objects: cached,
      sync: { objects, ms: Math.round(syncMs), objectsPerSecond: Math.round(objects / (syncMs / 1000)) },
      manifestRead: { firstAccount: manifestFirst, newestAccount: manifestNewest },
      serverGroupsExpanded: serverGroups,
      disk: { totalBytes: total, bytesPerObject: Math.round(total / cached), tables },
      server: { idleCpuShare, rssBytes: idle1.rssBytes },
      loadAverage1m: loadavg()[0],
    });
  }
} finally {
  for (const a of agents) a.close();
  await ps.stop();
  await db.drop().catch(() => undefined);
  await mariadb?.stop();
}

type Stage = {
  objects: number;
  sync: { objectsPerSecond: number };
  manifestRead: { firstAccount: Distribution };
  serverGroupsExpanded: Distribution;
  disk: { bytesPerObject: number };
};
const [base, last] = [stages[0] as Stage, stages.at(-1) as Stage];
const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
const ratios = {
  objects: ratio(last.objects, base.objects),
  syncRate: ratio(last.sync.objectsPerSecond, base.sync.objectsPerSecond),
  manifestReadP99: ratio(last.manifestRead.firstAccount.p99, base.manifestRead.firstAccount.p99),
  serverGroupsP99: ratio(last.serverGroupsExpanded.p99, base.serverGroupsExpanded.p99),
  bytesPerObject: ratio(last.disk.bytesPerObject, base.disk.bytesPerObject),
};
emit({
  name: 'mysql-scale',
  params: {
    stages: STAGES,
    objectsPerAccount: OBJECTS_PER_ACCOUNT,
    samples: SAMPLES,
    concurrentSyncs: CONCURRENT_SYNCS,
  },
  machine: machineInfo(),
  versions: versions(),
  figures: { stages },
  baseline: { stage: STAGES[0] },
  ratios,
  goal: {
    'sync rate, last stage vs first': '>= 0.5 (the rate holds as the tables grow)',
    'view and manifest p99, last stage vs first': '<= 2 (indexed reads do not grow with the table)',
  },
  met: ratios.syncRate >= 0.5 && ratios.manifestReadP99 <= 2 && ratios.serverGroupsP99 <= 2,
});
