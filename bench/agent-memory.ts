/**
 * `npm run bench:agent-memory [-- --accounts 1,10,100 --objects 10000,100000 --quick]`: the agent's memory as
 * the cluster grows (objects) and as it serves more accounts. A real control plane (private, or --kubeconfig)
 * holds N ConfigMaps of ~1 KiB; the real plugin-server (memory store) receives; the agent runs as its own
 * process from dist/ (run `npm run build` first) and its RSS is sampled from /proc during and after the sync.
 *
 * Two sweeps: objects at 1 account (memory should be flat in cluster size: the agent keeps no object copies)
 * and accounts at the smallest object count (goal: ≤ 150 MB RSS for 100 accounts, README's Performance section).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { machine, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { AGENT_ALLOCATOR_ENV } from '../src/compiler/runtimes.js';
import { ControlPlane } from '../test/infra/control-plane.js';
import { freePort } from '../test/infra/ports.js';
import { procStats, repoRoot } from './lib/child.js';
import { startPluginServer } from './lib/plugin-server.js';
import { emit, flags, machineInfo, progress, versions } from './lib/report.js';

const f = flags({
  accounts: { type: 'string', default: '1,10,100' },
  objects: { type: 'string', default: '10000,100000' },
  'object-bytes': { type: 'string', default: '1024' },
  kubeconfig: { type: 'string' },
  'settle-seconds': { type: 'string', default: '20' },
  // Agent runtimes to compare back-to-back in the same run (names from VARIANTS below).
  variants: { type: 'string', default: 'default' },
  repeat: { type: 'string', default: '1' },
  // Debian's libjemalloc2 (scripts/test-deps.sh installs it); the image links it to /usr/local/lib.
  jemalloc: { type: 'string', default: `/usr/lib/${machine()}-linux-gnu/libjemalloc.so.2` },
  // Another build of the agent (a directory with bin/, dist/, the oclif manifest and node_modules): variant "other".
  'other-root': { type: 'string' },
});
// Quick mode (CI smoke) settles briefly: the figures are then indicative only.
const settleMs = (f.quick ? 5 : Number(f['settle-seconds'])) * 1000;
const accountLevels = (f.quick ? '1,5' : String(f.accounts)).split(',').map(Number);
const objectLevels = (f.quick ? '1000,3000' : String(f.objects))
  .split(',')
  .map(Number)
  .sort((a, b) => a - b);
const objectBytes = Number(f['object-bytes']);
const NS = 'bench-agent-memory';

const mb = (b: number): number => Math.round((b / 1024 / 1024) * 10) / 10;

/**
 * Ways to run the agent, each measured in the same run as the others: an environment (allocator, Node flags)
 * and agent config overrides (queue and sync settings).
 */
interface Variant {
  /** Where bin/run.js is; this checkout by default. */
  root?: string;
  env?: Record<string, string>;
  queue?: Record<string, number>;
  kubernetes?: Record<string, number | string>;
}
const jemalloc = String(f.jemalloc);
// As the agent ships (compiler and chart): its allocator environment, with this machine's library path.
const shippedEnv = Object.fromEntries(
  AGENT_ALLOCATOR_ENV.map((e) => [e.name, e.name === 'LD_PRELOAD' ? jemalloc : e.value]),
);
const VARIANTS: Record<string, Variant> = {
  default: { env: shippedEnv },
  ...(f['other-root'] ? { other: { root: String(f['other-root']) } } : {}),
  // The variants below start from glibc's malloc and no flags (add default's env with "+jemalloc-bg").
  glibc: {},
  jemalloc: { env: { LD_PRELOAD: jemalloc } },
  // jemalloc returning freed pages from a background thread (without it, only on later allocations).
  'jemalloc-bg': { env: { LD_PRELOAD: jemalloc, MALLOC_CONF: 'background_thread:true' } },
  arena2: { env: { MALLOC_ARENA_MAX: '2' } },
  mmap128k: { env: { MALLOC_MMAP_THRESHOLD_: '131072' } },
  semi1: { env: { NODE_OPTIONS: '--max-semi-space-size=1' } },
  queue4m: { queue: { maxBytes: 4 * 1024 * 1024 } },
  batch256k: { queue: { maxBatchBytes: 256 * 1024 } },
  syncs2: { kubernetes: { maxConcurrentSyncs: 2 } },
};
/** A variant's name, or names joined with "+" (e.g. other+jemalloc-bg): their settings merged. */
function variantOf(name: string): Variant {
  const parts = name.split('+').map((n) => {
    const v = VARIANTS[n];
    if (!v) throw new Error(`--variants: unknown variant ${n} (known: ${Object.keys(VARIANTS).join(', ')})`);
    return v;
  });
  return parts.reduce<Variant>(
    (a, b) => ({
      root: b.root ?? a.root,
      env: { ...a.env, ...b.env },
      queue: { ...a.queue, ...b.queue },
      kubernetes: { ...a.kubernetes, ...b.kubernetes },
    }),
    {},
  );
}
const variants = String(f.variants).split(',');
for (const v of variants) variantOf(v);
if (variants.some((v) => variantOf(v).env?.LD_PRELOAD) && !existsSync(jemalloc)) {
  throw new Error(`--jemalloc: ${jemalloc} not found (bash scripts/test-deps.sh installs Debian's libjemalloc2)`);
}
const repeat = Number(f.repeat);

/** RSS by kind of mapping from /proc/<pid>/smaps: malloc's main arena, other anonymous memory, files. */
async function rssBreakdown(pid: number): Promise<{ mallocHeapMB: number; anonMB: number; fileMB: number }> {
  const { readFile } = await import('node:fs/promises');
  const text = await readFile(`/proc/${pid}/smaps`, 'utf8');
  let kind: 'heap' | 'anon' | 'file' = 'anon';
  const kb = { heap: 0, anon: 0, file: 0 };
  for (const line of text.split('\n')) {
    const header = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (header) {
      const name = header[1]!;
      kind = name === '[heap]' ? 'heap' : name.startsWith('/') ? 'file' : 'anon';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss) kb[kind] += Number(rss[1]);
  }
  return { mallocHeapMB: mb(kb.heap * 1024), anonMB: mb(kb.anon * 1024), fileMB: mb(kb.file * 1024) };
}

interface Connection {
  host: string;
  port: string;
  ca?: string;
  cert?: string;
  key?: string;
  headers?: Record<string, string>;
}

/** Where and how to reach the API server, from the kubeconfig (client-node resolves the credentials). */
async function connectionOf(kubeconfig: string): Promise<Connection> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const server = new URL(kc.getCurrentCluster()!.server);
  const pem = (x: unknown): string | undefined => (x === undefined ? undefined : String(x));
  return {
    host: server.hostname,
    port: server.port,
    ca: pem(opts.ca),
    cert: pem(opts.cert),
    key: pem(opts.key),
    headers: opts.headers as Record<string, string> | undefined,
  };
}

/** Tops the namespace up to `count` ConfigMaps with concurrent POSTs (kubectl would take minutes). */
async function fillConfigMaps(kubeconfig: string, count: number, existing: number): Promise<void> {
  const conn = await connectionOf(kubeconfig);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 32, ca: conn.ca, cert: conn.cert, key: conn.key });
  const post = (path: string, body: object): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: conn.host,
          port: conn.port,
          path,
          method: 'POST',
          agent,
          headers: { ...conn.headers, 'content-type': 'application/json' },
        },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end(JSON.stringify(body));
    });
  if (existing === 0) await post('/api/v1/namespaces', { metadata: { name: NS } });
  const payload = 'x'.repeat(Math.max(0, objectBytes - 300));
  let next = existing;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < count) {
        const i = next++;
        const status = await post(`/api/v1/namespaces/${NS}/configmaps`, {
          metadata: { name: `cm-${i}`, labels: { app: 'bench' } },
          data: { payload },
        });
        if (status !== 201 && status !== 409) throw new Error(`creating cm-${i}: HTTP ${status}`);
      }
    }),
  );
  agent.destroy();
}

async function metric(admin: string, name: string): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm');
  let sum = 0;
  for (const x of text.matchAll(m)) sum += Number(x[1]);
  return sum;
}

interface Run {
  variant: string;
  accounts: number;
  objects: number;
  watches: number;
  syncSeconds: number;
  eventsSent: number;
  rssPeakMB: number;
  rssAfter5sMB: number;
  rssSteadyMB: number;
  heapUsedMB: number;
  heapTotalMB: number;
  externalMB: number;
  steady: { mallocHeapMB: number; anonMB: number; fileMB: number };
}

interface Baseline {
  watches: number;
  rssMB: number;
  steady: { mallocHeapMB: number; anonMB: number; fileMB: number };
}

/** A bare Node process holding `watches` plain watch connections on the same cluster, for as long as the agent settles. */
async function runBaseline(kubeconfig: string, watches: number): Promise<Baseline> {
  const file = join(mkdtempSync(join(tmpdir(), 'bench-bare-')), 'connection.json');
  writeFileSync(file, JSON.stringify(await connectionOf(kubeconfig)), { mode: 0o600 });
  const child = spawn(process.execPath, [join(repoRoot, 'bench/lib/bare-watcher.mjs'), file, NS, String(watches)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`bare watcher exited with ${code}`)));
  });
  try {
    if (line !== 'ready') throw new Error(`bare watcher: ${line}`);
    await sleep(settleMs);
    return { watches, rssMB: mb((await procStats(child.pid!)).rssBytes), steady: await rssBreakdown(child.pid!) };
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
  }
}

async function runAgent(
  kubeconfig: string,
  grpcAddress: string,
  accounts: number,
  objects: number,
  variant: string,
): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-agent-'));
  const adminPort = await freePort();
  const v = variantOf(variant);
  const config = {
    server: { address: grpcAddress, insecure: true },
    queue: v.queue,
    agentId: `bench-${accounts}-${objects}`,
    admin: { host: '127.0.0.1', port: adminPort },
    kubernetes: {
      ...v.kubernetes,
      accounts: Array.from({ length: accounts }, (_, i) => ({
        name: `mem-${objects}-${accounts}-${i}`,
        kubeconfigFile: kubeconfig,
        kinds: ['ConfigMap'],
      })),
    },
  };
  writeFileSync(join(dir, 'agent.yaml'), JSON.stringify(config));
  const admin = `http://127.0.0.1:${adminPort}`;
  const t0 = Date.now();
  const child = spawn(
    process.execPath,
    [join(v.root ?? repoRoot, 'bin/run.js'), 'agent', '--config', join(dir, 'agent.yaml')],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, SCALE_AGENT_LOG_LEVEL: 'warn', ...v.env },
    },
  );
  let peak = 0;
  const sampler = setInterval(() => {
    void procStats(child.pid!)
      .then((s) => (peak = Math.max(peak, s.rssBytes)))
      .catch(() => undefined);
  }, 100);
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`agent exited with ${child.exitCode}`);
      try {
        const ready = (await fetch(`${admin}/readyz`)).ok;
        if (ready && (await metric(admin, 'scale_agent_agent_queue_bytes')) === 0) break;
      } catch {
        // not listening yet
      }
      await sleep(100);
    }
    const syncSeconds = (Date.now() - t0) / 1000;
    // Steady state: after the sync, once V8's idle-time GC has collected the list garbage.
    await sleep(5000);
    const after5s = await procStats(child.pid!);
    await sleep(Math.max(0, settleMs - 5000));
    const steady = await procStats(child.pid!);
    return {
      variant,
      accounts,
      objects,
      watches: await metric(admin, 'scale_agent_agent_watches'),
      syncSeconds: Math.round(syncSeconds * 100) / 100,
      eventsSent: await metric(admin, 'scale_agent_agent_events_sent_total'),
      rssPeakMB: mb(Math.max(peak, steady.rssBytes)),
      rssAfter5sMB: mb(after5s.rssBytes),
      rssSteadyMB: mb(steady.rssBytes),
      heapUsedMB: mb(await metric(admin, 'scale_agent_agent_nodejs_heap_size_used_bytes')),
      heapTotalMB: mb(await metric(admin, 'scale_agent_agent_nodejs_heap_size_total_bytes')),
      externalMB: mb(await metric(admin, 'scale_agent_agent_nodejs_external_memory_bytes')),
      steady: await rssBreakdown(child.pid!),
    };
  } finally {
    clearInterval(sampler);
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
  }
}

let cp: ControlPlane | undefined;
const kubeconfig = f.kubeconfig ? String(f.kubeconfig) : undefined;
try {
  if (!kubeconfig) {
    progress('starting a private control plane');
    cp = await ControlPlane.start({ dir: mkdtempSync(join(tmpdir(), 'bench-agent-cp-')) });
  }
  const kc = kubeconfig ?? cp!.kubeconfig;
  const runs: Run[] = [];
  const baselines: Baseline[] = [];
  let filled = 0;
  for (const objects of objectLevels) {
    progress(`creating ConfigMaps up to ${objects}`);
    await fillConfigMaps(kc, objects, filled);
    filled = objects;
    const levels = objects === objectLevels[0] ? accountLevels : [Math.min(...accountLevels)];
    for (const accounts of levels) {
      for (let r = 0; r < repeat; r++) {
        for (const variant of variants) {
          // A fresh plugin-server per run, so the receiver's own memory never slows the next run.
          const ps = await startPluginServer();
          try {
            progress(`agent (${variant}) with ${accounts} account(s), ${objects} objects`);
            runs.push(await runAgent(kc, ps.grpcAddress, accounts, objects, variant));
            progress(JSON.stringify(runs.at(-1)));
          } finally {
            await ps.stop();
          }
        }
      }
      if (!baselines.some((b) => b.watches === accounts)) {
        progress(`bare Node baseline holding ${accounts} watch(es)`);
        baselines.push(await runBaseline(kc, accounts));
        progress(JSON.stringify(baselines.at(-1)));
      }
    }
  }
  // Per variant, the median of its repeats; the first variant is the one the goals are judged on.
  const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] ?? NaN;
  const steadyOf = (variant: string, accounts: number, objects: number): number =>
    median(
      runs
        .filter((r) => r.variant === variant && r.accounts === accounts && r.objects === objects)
        .map((r) => r.rssSteadyMB),
    );
  const fewest = Math.min(...accountLevels);
  const most = Math.max(...accountLevels);
  const summary = Object.fromEntries(
    variants.map((v) => {
      const small = steadyOf(v, fewest, objectLevels[0]!);
      const large = steadyOf(v, fewest, objectLevels.at(-1)!);
      const base = baselines.find((b) => b.watches === most)?.rssMB ?? NaN;
      return [
        v,
        {
          steadyRssLargestOverSmallestCluster: Math.round((large / small) * 100) / 100,
          rssMostAccountsMB: steadyOf(v, most, objectLevels[0]!),
          rssMostAccountsOverBareWatches: Math.round((steadyOf(v, most, objectLevels[0]!) / base) * 100) / 100,
        },
      ];
    }),
  );
  const judged = summary[variants[0]!]!;
  const flatness = judged.steadyRssLargestOverSmallestCluster;
  const goalAccounts = most === 100 ? judged.rssMostAccountsMB <= 150 : true;
  emit({
    name: 'agent-memory',
    params: {
      accountLevels,
      objectLevels,
      objectBytes,
      settleMs,
      kinds: ['ConfigMap'],
      quick: Boolean(f.quick),
      variants: Object.fromEntries(variants.map((v) => [v, variantOf(v)])),
      repeat,
    },
    machine: machineInfo(),
    versions: versions(),
    figures: { runs, byVariant: summary },
    baseline: { bareWatchers: baselines },
    ratios: {
      steadyRssLargestOverSmallestCluster: flatness,
      rssMostAccountsOverBareWatches: judged.rssMostAccountsOverBareWatches,
    },
    goal: { rss100AccountsMB: '<= 150', steadyRssLargestOverSmallestCluster: '<= 1.25 (flat in cluster size)' },
    met: goalAccounts && flatness <= 1.25,
    notes: [
      'RSS from /proc/<pid>/status of the agent process (dist/, Node ' +
        process.version +
        '); peak sampled every 100 ms during the sync.',
      'Every account watches the same cluster and lists every ConfigMap, so 100 accounts stream 100 × objects changes.',
      'baselines: a bare Node process holding as many plain HTTPS watch connections (no list, nothing kept), same settle time.',
      'steady: RSS by mapping from /proc/<pid>/smaps (mallocHeap = glibc main arena [heap]; anon = V8 pages, other arenas, jemalloc).',
    ],
  });
} finally {
  await cp?.stop();
}
