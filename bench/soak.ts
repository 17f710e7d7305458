/**
 * `npm run soak -- --minutes N` (not in CI): steady churn, REST operations and Spinnaker reads for N minutes
 * against a plugin-server on MySQL and an agent (private control plane and MariaDB, Toxiproxy on the links with no
 * toxic), sampling every 10 s: RSS and open descriptors (/proc), V8 heap used, active handles and event-loop lag
 * (the processes' own /metrics), and MariaDB's Threads_connected. Verdict: after the warm-up (the first fifth), the
 * mean of the last third of the samples is within 10% of the mean of the first third, for every leak signal.
 * Operations are settled and checked (none lost, none run twice) every minute; the ConfigMaps they deploy are
 * deleted again and the appends' ids taken off the ledger, so the cache stays the same size and growth means a leak.
 * Both processes run from dist/ (run `npm run build` first) at log level info, the agent on the allocator it ships
 * with (`--runtime shipped`, jemalloc) or on glibc's malloc (`--runtime glibc`); `--heap-snapshots` writes the
 * agent's V8 heap at the end of the warm-up and at the end, to compare retained sizes by constructor.
 */
import { existsSync, mkdtempSync } from 'node:fs';
import { machine, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createConnection } from 'mysql2/promise';
import { AGENT_ALLOCATOR_ENV } from '../src/compiler/runtimes.js';
import { FaultRig, Load, sampleHeap, sampleProcess } from '../test/infra/faults/index.js';
import { kubeRequest, objectPath } from '../test/infra/faults/kube-raw.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';
import { useShippedBuild } from './lib/shipped-build.js';

const f = flags({
  minutes: { type: 'string', default: '10' },
  'sample-seconds': { type: 'string', default: '10' },
  runtime: { type: 'string', default: 'shipped' },
  // Debian's libjemalloc2 (scripts/test-deps.sh installs it); the image links it to /usr/local/lib.
  jemalloc: { type: 'string', default: `/usr/lib/${machine()}-linux-gnu/libjemalloc.so.2` },
  'heap-snapshots': { type: 'boolean', default: false },
});
const minutes = Number(f.quick ? 1 : f.minutes);
const sampleMs = Number(f['sample-seconds']) * 1000;
if (!(minutes > 0)) throw new Error(`--minutes must be a positive number, got ${String(f.minutes)}`);
const runtime = String(f.runtime);
if (runtime !== 'shipped' && runtime !== 'glibc') throw new Error(`--runtime must be shipped or glibc, got ${runtime}`);
const jemalloc = String(f.jemalloc);
if (runtime === 'shipped' && !existsSync(jemalloc)) {
  throw new Error(`--jemalloc: ${jemalloc} not found (bash scripts/test-deps.sh installs Debian's libjemalloc2)`);
}
useShippedBuild();

interface Sample {
  atS: number;
  serverRssKb: number;
  serverFds: number;
  serverHeapBytes: number;
  serverHandles: number;
  serverLagP99Ms: number;
  agentRssKb: number;
  agentRssAnonKb: number;
  agentRssFileKb: number;
  agentFds: number;
  agentHeapBytes: number;
  agentHandles: number;
  agentLagP99Ms: number;
  /** V8's committed pages, its young generation, live old space, and Buffers/ArrayBuffers outside the heap. */
  agentHeapTotalKb: number;
  agentNewSpaceKb: number;
  agentOldUsedKb: number;
  agentExternalKb: number;
  mysqlThreadsConnected: number;
}

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(name.length + 1)) : NaN;
}

async function metricsOf(url: string, prefix: string) {
  const text = await (await fetch(url)).text();
  return {
    heap: metric(text, `${prefix}nodejs_heap_size_used_bytes`),
    handles: metric(text, `${prefix}nodejs_active_handles_total`),
    lagP99Ms: metric(text, `${prefix}nodejs_eventloop_lag_p99_seconds`) * 1000,
  };
}

const dir = mkdtempSync(join(tmpdir(), 'soak-'));
progress(`starting the rig in ${dir} for ${minutes} min`);
const agentEnv: Record<string, string> = {
  SCALE_AGENT_LOG_LEVEL: 'info',
  ...(runtime === 'shipped'
    ? Object.fromEntries(AGENT_ALLOCATOR_ENV.map((e) => [e.name, e.name === 'LD_PRELOAD' ? jemalloc : e.value]))
    : {}),
  ...(f['heap-snapshots'] ? { NODE_OPTIONS: `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=${dir}` } : {}),
};
const rig = await FaultRig.start({ dir, store: 'mysql', controlPlane: 'private', mariadb: 'private', agentEnv });
const samples: Sample[] = [];
const opsTotals = { posted: 0, lost: 0, duplicates: 0, failed: 0 };
let reads = 0;
let readErrors = 0;
try {
  const load = await Load.create(rig);
  const mysql = await createConnection(rig.mariadb!.url);
  const kc = rig.kubeConfig();
  const ns = rig.namespaces[0]!;
  let reading = true;
  // Spinnaker-style reads next to the writes: what Deck and Orca poll.
  const readLoop = (async () => {
    const paths = [
      '/credentials',
      '/applications',
      `/manifests/faults/${ns}/${encodeURIComponent('configMap kube-root-ca.crt')}`,
      '/armory/accounts',
    ];
    for (let i = 0; reading; i++) {
      const res = await fetch(rig.server.httpBase + paths[i % paths.length]!).catch(() => undefined);
      await res?.arrayBuffer();
      if (res?.ok) reads += 1;
      else readErrors += 1;
      await sleep(50);
    }
  })();
  load.start();
  const t0 = Date.now();
  let nextSettle = t0 + 60_000;
  let warmSnapshot = !f['heap-snapshots'];
  const heapSnapshot = (): boolean => {
    // Node writes it synchronously on the signal (--heapsnapshot-signal), into --diagnostic-dir.
    process.kill(rig.agent.proc.pid, 'SIGUSR2');
    progress(`agent heap snapshot requested at ${Math.round((Date.now() - t0) / 1000)} s, into ${dir}`);
    return true;
  };
  while (Date.now() - t0 < minutes * 60_000) {
    await sleep(sampleMs);
    const server = sampleProcess(rig.server.proc.pid);
    const agent = sampleProcess(rig.agent.proc.pid);
    const sm = await metricsOf(`${rig.server.httpBase}/metrics`, 'scale_agent_plugin_server_');
    const am = await metricsOf(`${rig.agent.adminBase}/metrics`, 'scale_agent_agent_');
    const ah = await sampleHeap(`${rig.agent.adminBase}/metrics`, 'scale_agent_agent_');
    const [rows] = await mysql.query("SHOW STATUS LIKE 'Threads_connected'");
    const threads = Number((rows as { Value: string }[])[0]?.Value ?? NaN);
    const s: Sample = {
      atS: Math.round((Date.now() - t0) / 1000),
      serverRssKb: server?.rssKb ?? NaN,
      serverFds: server?.fds ?? NaN,
      serverHeapBytes: sm.heap,
      serverHandles: sm.handles,
      serverLagP99Ms: Math.round(sm.lagP99Ms * 10) / 10,
      agentRssKb: agent?.rssKb ?? NaN,
      agentRssAnonKb: agent?.rssAnonKb ?? NaN,
      agentRssFileKb: agent?.rssFileKb ?? NaN,
      agentFds: agent?.fds ?? NaN,
      agentHeapBytes: am.heap,
      agentHandles: am.handles,
      agentLagP99Ms: Math.round(am.lagP99Ms * 10) / 10,
      agentHeapTotalKb: ah?.totalKb ?? NaN,
      agentNewSpaceKb: ah?.newSpaceTotalKb ?? NaN,
      agentOldUsedKb: ah?.oldSpaceUsedKb ?? NaN,
      agentExternalKb: ah?.externalKb ?? NaN,
      mysqlThreadsConnected: threads,
    };
    samples.push(s);
    progress(JSON.stringify(s));
    // The first snapshot where the verdict's first third begins (after the warm-up), the second at the end.
    if (!warmSnapshot && Date.now() - t0 >= (minutes * 60_000) / 5) warmSnapshot = heapSnapshot();
    if (Date.now() >= nextSettle) {
      nextSettle += 60_000;
      // Settles what was posted so far (the load keeps posting), then deletes the ConfigMaps those deployed.
      const report = await load.ops.settle(kc);
      opsTotals.posted += report.posted;
      opsTotals.lost += report.lost.length;
      opsTotals.duplicates += report.duplicates.length;
      opsTotals.failed += report.failed.length;
      if (report.lost.length || report.duplicates.length) progress(`ops problems: ${JSON.stringify(report)}`);
      for (const name of report.configMaps) {
        await kubeRequest(kc, 'DELETE', objectPath('v1', 'ConfigMap', ns, name)).catch((e: unknown) =>
          progress(`cleanup failed: ${String(e)}`),
        );
      }
      await load.ops.trimLedger(kc, report.appends).catch((e: unknown) => progress(`ledger trim failed: ${String(e)}`));
    }
  }
  if (f['heap-snapshots']) heapSnapshot();
  reading = false;
  await readLoop;
  await load.stop();
  const final = await load.ops.settle(kc);
  opsTotals.posted += final.posted;
  opsTotals.lost += final.lost.length;
  opsTotals.duplicates += final.duplicates.length;
  opsTotals.failed += final.failed.length;
  await rig.converge();
  await mysql.end();
} finally {
  await rig.stop();
}

// Flat: after the warm-up, the last third's mean within 10% of the first third's.
// Not verdicts, but what tells a leak from a young generation or an allocator that keeps pages.
const BREAKDOWN = [
  'agentRssAnonKb',
  'agentRssFileKb',
  'agentHeapTotalKb',
  'agentNewSpaceKb',
  'agentOldUsedKb',
  'agentExternalKb',
] as const;
const LEAK_SIGNALS = [
  'serverRssKb',
  'serverHeapBytes',
  'serverFds',
  'serverHandles',
  'agentRssKb',
  'agentHeapBytes',
  'agentFds',
  'agentHandles',
  'mysqlThreadsConnected',
] as const;
const steady = samples.slice(Math.floor(samples.length / 5));
const third = Math.max(1, Math.floor(steady.length / 3));
const mean = (xs: Sample[], k: keyof Sample) => xs.reduce((a, s) => a + s[k], 0) / (xs.length || 1);
const ratioOf = (k: keyof Sample) => {
  const first = mean(steady.slice(0, third), k);
  const last = mean(steady.slice(-third), k);
  return { first: Math.round(first), last: Math.round(last), ratio: Math.round((last / first) * 1000) / 1000 };
};
const growth = Object.fromEntries(LEAK_SIGNALS.map((k) => [k, ratioOf(k)]));
const flat = Object.values(growth).every((g) => g.ratio <= 1.1);
emit({
  name: 'soak',
  params: { minutes, sampleSeconds: sampleMs / 1000, store: 'mysql', runtime, agentEnv },
  machine: machineInfo(),
  versions: versions(),
  figures: {
    samples: samples.length,
    growth,
    agentBreakdown: Object.fromEntries(BREAKDOWN.map((k) => [k, ratioOf(k)])),
    eventLoopLagP99Ms: {
      server: distribution(samples.map((s) => s.serverLagP99Ms)),
      agent: distribution(samples.map((s) => s.agentLagP99Ms)),
    },
    ops: opsTotals,
    reads,
    readErrors,
    series: samples,
  },
  goal: { growthRatioMax: 1.1, lost: 0, duplicates: 0 },
  met: flat && opsTotals.lost === 0 && opsTotals.duplicates === 0,
});
