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
import { mkdtempSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
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

/** Tops the namespace up to `count` ConfigMaps with concurrent POSTs (kubectl would take minutes). */
async function fillConfigMaps(kubeconfig: string, count: number, existing: number): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const server = new URL(kc.getCurrentCluster()!.server);
  const agent = new https.Agent({ keepAlive: true, maxSockets: 32, ca: opts.ca, cert: opts.cert, key: opts.key });
  const post = (path: string, body: object): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = https.request(
        {
          host: server.hostname,
          port: server.port,
          path,
          method: 'POST',
          agent,
          headers: { ...opts.headers, 'content-type': 'application/json' },
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
  accounts: number;
  objects: number;
  watches: number;
  syncSeconds: number;
  eventsSent: number;
  rssPeakMB: number;
  rssAfter5sMB: number;
  rssSteadyMB: number;
  heapUsedMB: number;
}

async function runAgent(kubeconfig: string, grpcAddress: string, accounts: number, objects: number): Promise<Run> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-agent-'));
  const adminPort = await freePort();
  const config = {
    server: { address: grpcAddress, insecure: true },
    agentId: `bench-${accounts}-${objects}`,
    admin: { host: '127.0.0.1', port: adminPort },
    kubernetes: {
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
  const child = spawn(process.execPath, [join(repoRoot, 'bin/run.js'), 'agent', '--config', join(dir, 'agent.yaml')], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, SCALE_AGENT_LOG_LEVEL: 'warn' },
  });
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
      accounts,
      objects,
      watches: await metric(admin, 'scale_agent_agent_watches'),
      syncSeconds: Math.round(syncSeconds * 100) / 100,
      eventsSent: await metric(admin, 'scale_agent_agent_events_sent_total'),
      rssPeakMB: mb(Math.max(peak, steady.rssBytes)),
      rssAfter5sMB: mb(after5s.rssBytes),
      rssSteadyMB: mb(steady.rssBytes),
      heapUsedMB: mb(await metric(admin, 'scale_agent_agent_nodejs_heap_size_used_bytes')),
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
  let filled = 0;
  for (const objects of objectLevels) {
    progress(`creating ConfigMaps up to ${objects}`);
    await fillConfigMaps(kc, objects, filled);
    filled = objects;
    const levels = objects === objectLevels[0] ? accountLevels : [Math.min(...accountLevels)];
    for (const accounts of levels) {
      // A fresh plugin-server per run, so the receiver's own memory never slows the next run.
      const ps = await startPluginServer();
      try {
        progress(`agent with ${accounts} account(s), ${objects} objects`);
        runs.push(await runAgent(kc, ps.grpcAddress, accounts, objects));
        progress(JSON.stringify(runs.at(-1)));
      } finally {
        await ps.stop();
      }
    }
  }
  const one = runs.filter((r) => r.accounts === Math.min(...accountLevels));
  const small = one[0];
  const large = one.at(-1);
  const most = runs.filter((r) => r.objects === objectLevels[0]).sort((a, b) => b.accounts - a.accounts)[0];
  const flatness = small && large ? Math.round((large.rssSteadyMB / small.rssSteadyMB) * 100) / 100 : NaN;
  const goalAccounts = most?.accounts === 100 ? most.rssSteadyMB <= 150 : true;
  emit({
    name: 'agent-memory',
    params: { accountLevels, objectLevels, objectBytes, settleMs, kinds: ['ConfigMap'], quick: Boolean(f.quick) },
    machine: machineInfo(),
    versions: versions(),
    figures: { runs },
    ratios: { steadyRssLargestOverSmallestCluster: flatness },
    goal: { rss100AccountsMB: '<= 150', steadyRssLargestOverSmallestCluster: '<= 1.25 (flat in cluster size)' },
    met: goalAccounts && flatness <= 1.25,
    notes: [
      'RSS from /proc/<pid>/status of the agent process (dist/, Node ' +
        process.version +
        '); peak sampled every 100 ms during the sync.',
      'Every account watches the same cluster and lists every ConfigMap, so 100 accounts stream 100 × objects changes.',
    ],
  });
} finally {
  await cp?.stop();
}
