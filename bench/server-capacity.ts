/**
 * Plugin-server capacity: 100, 1,000 and 2,000 simulated agent connections (one TCP/HTTP-2 connection each,
 * the real protocol via bench/fake-agents), each syncing its accounts and then changing objects at a steady
 * rate. Reported per level: accepted sessions, server RSS and CPU, change→store lag (send→ack as the agents
 * see it), and REST latency (GET /credentials, GET /manifests/...) measured while loaded. Baseline: the same
 * REST probes against the same server before any agent connected.
 *
 *   npx tsx bench/server-capacity.ts [--quick] [--levels 100,1000,2000] [--objects 50] [--rate 5] [--duration 20]
 */
import { runFleet } from './fake-agents/fleet.js';
import { procStats } from './lib/child.js';
import { startPluginServer } from './lib/plugin-server.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';

const f = flags({
  levels: { type: 'string', default: '100,1000,2000' },
  objects: { type: 'string', default: '50' },
  accounts: { type: 'string', default: '1' },
  rate: { type: 'string', default: '5' },
  duration: { type: 'string', default: '20' },
});
const levels = (f.quick ? '100' : String(f.levels)).split(',').map(Number);
const objects = Number(f.objects);
const accounts = Number(f.accounts);
const rate = Number(f.rate);
const duration = f.quick ? 5 : Number(f.duration);

const statuses: Record<string, number> = {};
async function timeGet(url: string): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(url);
  await res.arrayBuffer();
  const ms = performance.now() - t0;
  statuses[res.status] = (statuses[res.status] ?? 0) + 1;
  // A probe that is not answered from the cache would measure the wrong thing.
  if (res.status !== 200) throw new Error(`${url}: HTTP ${res.status}`);
  return ms;
}

const perLevel: Record<string, unknown>[] = [];
let idle: number[] = [];
for (const level of levels) {
  const ps = await startPluginServer({ type: 'memory' });
  const pid = ps.child.pid!;
  // Baseline: REST latency of the same server with no agents connected.
  const idleSamples: number[] = [];
  for (let i = 0; i < 50; i++) idleSamples.push(await timeGet(`${ps.httpUrl}/credentials`));
  idle = idle.concat(idleSamples);
  const before = await procStats(pid);
  const rest: number[] = [];
  const prefix = `cap${level}`;
  progress(`level ${level}: connecting and syncing`);
  const report = await runFleet({
    address: ps.grpcAddress,
    agents: level,
    accountsPerAgent: accounts,
    objectsPerAccount: objects,
    objectBytes: 1024,
    batchSize: 500,
    changesPerSecPerAgent: rate,
    steadySeconds: duration,
    wave: 100,
    idPrefix: prefix,
    onTick: async () => {
      for (let i = 0; i < 5; i++) {
        const agent = Math.floor(Math.random() * level);
        const obj = Math.floor(Math.random() * objects);
        rest.push(await timeGet(`${ps.httpUrl}/manifests/${prefix}-${prefix}-${agent}-0/bench/configMap%20cm-${obj}`));
        rest.push(await timeGet(`${ps.httpUrl}/credentials`));
      }
    },
  });
  const after = await procStats(pid);
  const wallS = report.connectSeconds + report.syncSeconds + report.steady.seconds;
  const { agentsHandle, ...r } = report;
  for (const a of agentsHandle) a.close();
  await ps.stop();
  progress(`level ${level}: accepted ${r.accepted}, ack p99 ${r.ackLatencyMs.p99} ms, RSS ${after.rssBytes >> 20} MiB`);
  perLevel.push({
    ...r,
    server: {
      rssBytes: after.rssBytes,
      cpuSeconds: (after.cpuMs - before.cpuMs) / 1000,
      cpuCoresAvg: (after.cpuMs - before.cpuMs) / 1000 / wallS,
    },
    restLatencyMsWhileLoaded: distribution(rest),
  });
}

const top = perLevel[perLevel.length - 1] as { agents: number; accepted: number } | undefined;
const goal = { acceptedSessionsPerReplica: 2000 };
emit({
  name: 'server-capacity',
  params: {
    levels,
    accountsPerAgent: accounts,
    objectsPerAccount: objects,
    changesPerSecPerAgent: rate,
    steadySeconds: duration,
    quick: f.quick,
  },
  machine: machineInfo(),
  versions: versions(),
  figures: { levels: perLevel },
  baseline: { restLatencyMsIdle: distribution(idle), restStatuses: statuses },
  goal,
  met: Boolean(top && top.agents >= goal.acceptedSessionsPerReplica && top.accepted >= goal.acceptedSessionsPerReplica),
  notes: f.quick ? ['quick mode: 100 agents only; the goal needs the full levels'] : [],
});
process.exit(0);
