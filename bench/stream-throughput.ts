/**
 * Stream throughput: changes/s from one agent stream into the plugin-server's cache (1 KB ConfigMaps, acked =
 * applied to the store), against the raw grpc-js transport limit measured in the same run (the same bytes and
 * the same flow-control window pushed to a bare server in its own process that decodes and stores nothing).
 * Beside it runs the same bare server keeping every message it receives: what holding the bytes alone costs, which on
 * a virtual machine where a page touched for the first time is expensive is much of the gap between a cache and the
 * bare transport. For MySQL and PostgreSQL the baseline is a bare batched upsert loop on one connection of the same
 * server. Runs alternate with baseline runs and the ratio is the median of the pairs' ratios, so drifting load on a
 * shared machine moves both.
 *
 * The sender is bench/fake-agents (the real protocol, pre-encoded), not the real agent: no API server can
 * produce 50k changes/s on this machine, and this benchmark is about the stream and the store.
 *
 *   npx tsx bench/stream-throughput.ts [--quick] [--objects 100000] [--object-bytes 1024] [--batch 500] [--runs 3]
 *     [--stores memory,mysql,postgres]
 */
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { FakeAgent } from './fake-agents/fake-agent.js';
import { startScript, procStats } from './lib/child.js';
import { startPluginServer } from './lib/plugin-server.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';
import { MariaDb, createDatabase } from '../test/infra/mariadb.js';
import { createPostgresDatabase, testPostgres } from '../test/infra/postgres.js';
import { configMapJson } from './lib/objects.js';

const f = flags({
  objects: { type: 'string', default: '100000' },
  'object-bytes': { type: 'string', default: '1024' },
  batch: { type: 'string', default: '500' },
  runs: { type: 'string', default: '3' },
  stores: { type: 'string', default: 'memory,mysql' },
});
const objects = f.quick ? 20_000 : Number(f.objects);
const objectBytes = Number(f['object-bytes']);
const batchSize = Number(f.batch);
const runs = f.quick ? 2 : Number(f.runs);
const stores = String(f.stores).split(',');

/** One full sync of `objects` changes through a fresh fake agent; returns changes/s (send start → last ack). */
async function pushOnce(address: string, agentId: string): Promise<number> {
  const agent = new FakeAgent({ address, agentId, accounts: 1, objectsPerAccount: objects, objectBytes, batchSize });
  const welcome = await agent.connect();
  if (welcome.rejectedAccounts.length) throw new Error(`account rejected: ${welcome.rejectedAccounts[0]!.reason}`);
  const msgs = agent.prepareSync();
  const t0 = performance.now();
  await agent.sendPrepared(msgs);
  const s = (performance.now() - t0) / 1000;
  agent.close();
  return agent.stats.sentChanges / s;
}

/**
 * Runs of `label` interleaved with runs of each baseline: a change in the machine's load between two series (this
 * VM is shared; the raw baseline alone has moved 2× between minutes) then moves both sides of a pair, and the ratio
 * is taken per pair. One unmeasured run of each first: JIT warm-up on all sides, and the store's pages in memory.
 */
async function pairedSeries(
  label: string,
  measure: (id: string) => Promise<number>,
  baselines: Record<string, (id: string) => Promise<number>>,
): Promise<{ rates: number[]; baseline: Record<string, number[]>; pairRatios: Record<string, number[]> }> {
  const names = Object.keys(baselines);
  for (const name of names) await baselines[name]!(`${name}-warmup`);
  await measure(`${label}-warmup`);
  const out = {
    rates: [] as number[],
    baseline: Object.fromEntries(names.map((n) => [n, [] as number[]])),
    pairRatios: Object.fromEntries(names.map((n) => [n, [] as number[]])),
  };
  for (let i = 0; i < runs; i++) {
    const b: Record<string, number> = {};
    for (const name of names) b[name] = await baselines[name]!(`${name}-${i}`);
    const rate = await measure(`${label}-${i}`);
    const against = names.map((n) => `${n} ${Math.round(b[n]!)}`).join(', ');
    progress(`${label} run ${i + 1}/${runs}: ${Math.round(rate)} changes/s (${against})`);
    out.rates.push(rate);
    for (const name of names) {
      out.baseline[name]!.push(b[name]!);
      out.pairRatios[name]!.push(rate / b[name]!);
    }
  }
  return out;
}

/** Bare batched upserts (JSON column, one connection), the MySQL store's physical limit on this server. */
async function mysqlUpsertBaseline(url: string): Promise<{ run: () => Promise<number>; close: () => Promise<void> }> {
  const conn = await createConnection(url);
  await conn.query(
    'CREATE TABLE bare (k VARCHAR(255) PRIMARY KEY, rv BIGINT NOT NULL, body LONGBLOB NOT NULL) ENGINE=InnoDB',
  );
  let r = 0;
  const run = async () => {
    const t0 = performance.now();
    for (let i = 0; i < objects; i += batchSize) {
      const rows = [];
      for (let j = i; j < Math.min(objects, i + batchSize); j++) {
        const rv = String(r * objects + j + 1);
        rows.push([
          `cm-${j}`,
          rv,
          configMapJson({ namespace: 'bench', name: `cm-${j}`, resourceVersion: rv, bytes: objectBytes }),
        ]);
      }
      await conn.query(
        'INSERT INTO bare (k, rv, body) VALUES ? ON DUPLICATE KEY UPDATE rv = VALUES(rv), body = VALUES(body)',
        [rows],
      );
    }
    r += 1;
    return objects / ((performance.now() - t0) / 1000);
  };
  return { run, close: () => conn.end() };
}

/**
 * Bare batched upserts (text column, one connection, one array per column as the store sends them), the PostgreSQL
 * store's physical limit on this server.
 */
async function postgresUpsertBaseline(
  url: string,
): Promise<{ run: () => Promise<number>; close: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('CREATE TABLE bare (k TEXT PRIMARY KEY, rv BIGINT NOT NULL, body TEXT NOT NULL)');
  let r = 0;
  const run = async () => {
    const t0 = performance.now();
    for (let i = 0; i < objects; i += batchSize) {
      const keys: string[] = [];
      const rvs: string[] = [];
      const bodies: string[] = [];
      for (let j = i; j < Math.min(objects, i + batchSize); j++) {
        const rv = String(r * objects + j + 1);
        keys.push(`cm-${j}`);
        rvs.push(rv);
        // As text: the store's column is text, and the server holds each object's JSON as a string too.
        bodies.push(
          configMapJson({ namespace: 'bench', name: `cm-${j}`, resourceVersion: rv, bytes: objectBytes }).toString(),
        );
      }
      await client.query(
        'INSERT INTO bare (k, rv, body) SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[]) ' +
          'ON CONFLICT (k) DO UPDATE SET rv = EXCLUDED.rv, body = EXCLUDED.body',
        [keys, rvs, bodies],
      );
    }
    r += 1;
    return objects / ((performance.now() - t0) / 1000);
  };
  return { run, close: () => client.end() };
}

const figures: Record<string, unknown> = {};
const baseline: Record<string, unknown> = {};
const ratios: Record<string, number> = {};
const median = (xs: number[]) => distribution(xs).p50;

if (stores.includes('memory')) {
  const raw = await startScript('bench/lib/raw-server-main.ts');
  const keeping = await startScript('bench/lib/raw-server-main.ts', ['--keep']);
  const ps = await startPluginServer({ type: 'memory' });
  /** CPU and first-touched pages of a server over the measured runs only (not the other side's, not the warm-up). */
  const serverCost = (pid: number) => {
    const sum = { cpuMs: 0, systemMs: 0, minorFaults: 0 };
    return {
      sum,
      measure: (push: (id: string) => Promise<number>) => async (id: string) => {
        const before = await procStats(pid);
        const rate = await push(id);
        if (id.endsWith('warmup')) return rate;
        const after = await procStats(pid);
        sum.cpuMs += after.cpuMs - before.cpuMs;
        sum.systemMs += after.systemMs - before.systemMs;
        sum.minorFaults += after.minorFaults - before.minorFaults;
        return rate;
      },
    };
  };
  const ours = serverCost(ps.child.pid!);
  const kept = serverCost(keeping.child.pid!);
  const s = await pairedSeries(
    'memory',
    ours.measure((id) => pushOnce(ps.grpcAddress, id)),
    {
      'raw-grpc': (id) => pushOnce(raw.line, id),
      'raw-grpc-keeping': kept.measure((id) => pushOnce(keeping.line, id)),
    },
  );
  const after = await procStats(ps.child.pid!);
  await ps.stop();
  raw.child.kill('SIGTERM');
  keeping.child.kill('SIGTERM');
  const perChange = (sum: { cpuMs: number; systemMs: number; minorFaults: number }) => ({
    serverCpuMsPerChange: sum.cpuMs / (objects * runs),
    serverSystemMsPerChange: sum.systemMs / (objects * runs),
    serverMinorFaultsPerChange: sum.minorFaults / (objects * runs),
  });
  baseline.rawGrpcChangesPerSec = distribution(s.baseline['raw-grpc']!);
  baseline.rawGrpcKeepingChangesPerSec = distribution(s.baseline['raw-grpc-keeping']!);
  baseline.rawGrpcKeeping = perChange(kept.sum);
  figures.memory = {
    changesPerSec: distribution(s.rates),
    pairRatios: s.pairRatios['raw-grpc'],
    pairRatiosVsKeeping: s.pairRatios['raw-grpc-keeping'],
    ...perChange(ours.sum),
    serverRssBytes: after.rssBytes,
  };
  ratios.memoryVsRawGrpc = median(s.pairRatios['raw-grpc']!);
  ratios.memoryVsRawGrpcLowestPair = Math.min(...s.pairRatios['raw-grpc']!);
  ratios.memoryVsRawGrpcKeeping = median(s.pairRatios['raw-grpc-keeping']!);
  ratios.rawGrpcKeepingVsRawGrpc = median(
    s.baseline['raw-grpc-keeping']!.map((k, i) => k / s.baseline['raw-grpc']![i]!),
  );
}

type Upsert = { run: () => Promise<number>; close: () => Promise<void> };
type Database = { url: string; drop: () => Promise<unknown> };

/**
 * One SQL store's series: the plugin-server on a database of its own, paired with the bare batched upsert on another
 * database of the same server.
 */
async function sqlStoreSeries(
  store: 'mysql' | 'postgres',
  createDb: (prefix: string) => Promise<Database>,
  upsertBaseline: (url: string) => Promise<Upsert>,
): Promise<void> {
  const bare = await createDb('bench_bare');
  const upsert = await upsertBaseline(bare.url);
  const db = await createDb('bench_stream');
  const ps = await startPluginServer({ type: store, url: db.url });
  const s = await pairedSeries(store, (id) => pushOnce(ps.grpcAddress, id), { 'bare-upsert': () => upsert.run() });
  await ps.stop();
  await upsert.close();
  await bare.drop();
  await db.drop();
  baseline[`${store}BareUpsertRowsPerSec`] = distribution(s.baseline['bare-upsert']!);
  figures[store] = { changesPerSec: distribution(s.rates), pairRatios: s.pairRatios['bare-upsert'] };
  ratios[`${store}VsBareUpsert`] = median(s.pairRatios['bare-upsert']!);
}

if (stores.includes('mysql')) {
  const mariadb = process.env.SCALE_AGENT_TEST_MYSQL_URL ? undefined : await MariaDb.start();
  const serverUrl = process.env.SCALE_AGENT_TEST_MYSQL_URL ?? mariadb!.url;
  await sqlStoreSeries('mysql', (prefix) => createDatabase(serverUrl, prefix), mysqlUpsertBaseline);
  await mariadb?.stop();
}

if (stores.includes('postgres')) {
  // SCALE_AGENT_TEST_POSTGRES_URL's server, else one of Debian's started here.
  const server = await testPostgres();
  await sqlStoreSeries('postgres', (prefix) => createPostgresDatabase(server.url, prefix), postgresUpsertBaseline);
  await server.stop();
}

const goal = { memoryChangesPerSec: 50_000, memoryVsRawGrpc: 0.5, mysqlVsBareUpsert: 0.7, postgresVsBareUpsert: 0.7 };
const memMedian = (figures.memory as { changesPerSec: { p50: number } } | undefined)?.changesPerSec.p50;
const met =
  (memMedian === undefined ||
    (memMedian >= goal.memoryChangesPerSec && (ratios.memoryVsRawGrpc ?? 0) >= goal.memoryVsRawGrpc)) &&
  (ratios.mysqlVsBareUpsert === undefined || ratios.mysqlVsBareUpsert >= goal.mysqlVsBareUpsert) &&
  (ratios.postgresVsBareUpsert === undefined || ratios.postgresVsBareUpsert >= goal.postgresVsBareUpsert);
emit({
  name: 'stream-throughput',
  params: { objects, objectBytes, batchSize, runs, stores, quick: f.quick },
  machine: machineInfo(),
  versions: versions(),
  figures,
  baseline,
  ratios,
  goal,
  met,
});
