/**
 * Stream throughput: changes/s from one agent stream into the plugin-server's cache (1 KB ConfigMaps, acked =
 * applied to the store), against the raw grpc-js transport limit measured in the same run (the same bytes and
 * the same flow-control window pushed to a bare server in its own process that decodes and stores nothing).
 * For MySQL the baseline is a bare batched upsert loop on one connection of the same server.
 *
 * The sender is bench/fake-agents (the real protocol, pre-encoded), not the real agent: no API server can
 * produce 50k changes/s on this machine, and this benchmark is about the stream and the store.
 *
 *   npx tsx bench/stream-throughput.ts [--quick] [--objects 100000] [--object-bytes 1024] [--batch 500] [--runs 3]
 */
import { createConnection } from 'mysql2/promise';
import { FakeAgent } from './fake-agents/fake-agent.js';
import { startScript, procStats } from './lib/child.js';
import { startPluginServer } from './lib/plugin-server.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';
import { MariaDb, createDatabase } from '../test/infra/mariadb.js';
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

async function series(address: string, label: string): Promise<number[]> {
  // One unmeasured run first: JIT warm-up on both sides, and the store's tables/pages in memory.
  await pushOnce(address, `${label}-warmup`);
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const rate = await pushOnce(address, `${label}-${i}`);
    progress(`${label} run ${i + 1}/${runs}: ${Math.round(rate)} changes/s`);
    out.push(rate);
  }
  return out;
}

/** Bare batched upserts (JSON column, one connection), the MySQL store's physical limit on this server. */
async function mysqlUpsertBaseline(url: string): Promise<number[]> {
  const conn = await createConnection(url);
  await conn.query(
    'CREATE TABLE bare (k VARCHAR(255) PRIMARY KEY, rv BIGINT NOT NULL, body LONGBLOB NOT NULL) ENGINE=InnoDB',
  );
  const out: number[] = [];
  for (let r = 0; r < runs; r++) {
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
    const rate = objects / ((performance.now() - t0) / 1000);
    progress(`mysql bare upsert run ${r + 1}/${runs}: ${Math.round(rate)} rows/s`);
    out.push(rate);
  }
  await conn.end();
  return out;
}

const raw = await startScript('bench/lib/raw-server-main.ts');
const baselineRates = await series(raw.line, 'raw-grpc');
raw.child.kill('SIGTERM');

const figures: Record<string, unknown> = {};
const baseline: Record<string, unknown> = { rawGrpcChangesPerSec: distribution(baselineRates) };
const ratios: Record<string, number> = {};
const median = (xs: number[]) => distribution(xs).p50;

if (stores.includes('memory')) {
  const ps = await startPluginServer({ type: 'memory' });
  const before = await procStats(ps.child.pid!);
  const rates = await series(ps.grpcAddress, 'memory');
  const after = await procStats(ps.child.pid!);
  await ps.stop();
  figures.memory = {
    changesPerSec: distribution(rates),
    serverCpuMsPerChange: (after.cpuMs - before.cpuMs) / (objects * runs),
    serverRssBytes: after.rssBytes,
  };
  ratios.memoryVsRawGrpc = median(rates) / median(baselineRates);
}

let mariadb: MariaDb | undefined;
if (stores.includes('mysql')) {
  const serverUrl = process.env.SCALE_AGENT_TEST_MYSQL_URL ?? (mariadb = await MariaDb.start()).url;
  const bare = await createDatabase(serverUrl, 'bench_bare');
  const upsert = await mysqlUpsertBaseline(bare.url);
  await bare.drop();
  baseline.mysqlBareUpsertRowsPerSec = distribution(upsert);
  const db = await createDatabase(serverUrl, 'bench_stream');
  const ps = await startPluginServer({ type: 'mysql', url: db.url });
  const rates = await series(ps.grpcAddress, 'mysql');
  await ps.stop();
  await db.drop();
  figures.mysql = { changesPerSec: distribution(rates) };
  ratios.mysqlVsBareUpsert = median(rates) / median(upsert);
}
await mariadb?.stop();

const goal = { memoryChangesPerSec: 50_000, memoryVsRawGrpc: 0.5, mysqlVsBareUpsert: 0.7 };
const memMedian = (figures.memory as { changesPerSec: { p50: number } } | undefined)?.changesPerSec.p50;
const met =
  (memMedian === undefined ||
    (memMedian >= goal.memoryChangesPerSec && (ratios.memoryVsRawGrpc ?? 0) >= goal.memoryVsRawGrpc)) &&
  (ratios.mysqlVsBareUpsert === undefined || ratios.mysqlVsBareUpsert >= goal.mysqlVsBareUpsert);
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
