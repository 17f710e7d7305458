/**
 * `npm run bench:operations [-- --quick] [--runs N] [--store memory|mysql] [--poll-ms 10]`
 *
 * POST → task complete for a one-Deployment deploy: `POST /kubernetes/ops` with a deployManifest (a new image each
 * run, so every run is a real rollout step: new generation and resourceVersion), then `GET /task/{id}` every
 * `--poll-ms` until `status.completed`; the figure ends at the task's finishedAt. That covers routing down the
 * agent's stream, the agent's server-side apply, the result coming back and the consistency barrier (the cache
 * holding the new resourceVersion). Baselines, same run, same control plane, alternating with the deploys round by
 * round: a bare server-side apply of the same manifest (from @kubernetes/client-node, and over warm node:http2), and
 * the same deploy through a relay of bare parts (lib/bare-relay-main.ts). Everything real: control plane, agent and
 * plugin-server processes (memory store, or `--store mysql`: a MariaDB started here). Prints one JSON result.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, KubeConfig, KubernetesObjectApi, PatchStrategy } from '@kubernetes/client-node';
import { ControlPlane } from '../test/infra/control-plane.js';
import { createDatabase, MariaDb } from '../test/infra/mariadb.js';
import { AgentProcess, PluginServerProcess } from '../test/infra/processes.js';
import { asDeployedBy, bareHttp2Applier, deployment } from './lib/bare-apply.js';
import { startScript } from './lib/child.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';
import { useShippedBuild } from './lib/shipped-build.js';

useShippedBuild();

const f = flags({ runs: { type: 'string' }, store: { type: 'string' }, 'poll-ms': { type: 'string' } });
const STORE = f.store ?? 'memory';
if (STORE !== 'memory' && STORE !== 'mysql') throw new Error(`--store: memory or mysql, not ${STORE}`);
const RUNS = Number(f.runs ?? (f.quick ? 10 : 100));
const WARMUP = 3;
/**
 * Between the client's task polls. At 1 ms the polling (some 500 requests a second, client and server, on two cores)
 * loads the machine while a deploy is measured and not while the bare applies are, which run between deploys. Its
 * effect is not isolated here: across runs the agent's part (sentToResult) was 2.0-2.6x the bare apply at 1 ms polls
 * and 1.7-1.9x at 10 ms, inside the spread of runs on this machine. Orca polls a task every few seconds.
 */
const POLL_MS = Number(f['poll-ms'] ?? 10);
const NAMESPACE = 'bench-ops';
const ACCOUNT = 'bench-ops';

/**
 * Where one deploy's milliseconds went, from the wall clock the client and the plugin-server share (same machine):
 * the client's POST start/answer and the moment it saw the task complete, and the operation record's queuedAt,
 * sentAt, resultAt and finishedAt (`GET /armory/agent/operations/{id}`, read after the run, outside the timing).
 * The server's stamps are Date.now(), so each stage is whole milliseconds.
 */
interface Stages {
  /** POST sent → the task stamped on the server (HTTP, validation). */
  postToQueued: number;
  /** Stamped → written to the agent's stream (storing the new task, routing). */
  queuedToSent: number;
  /** Sent → result back: the agent's apply, including its own request to the API server. */
  sentToResult: number;
  /** Result → the cache holding the written resourceVersions (the consistency barrier). */
  resultToBarrier: number;
  /** Barrier done → the client's poll seeing the task complete. */
  barrierToSeen: number;
}
const STAGES = ['postToQueued', 'queuedToSent', 'sentToResult', 'resultToBarrier', 'barrierToSeen'] as const;

interface Run {
  /** POST sent → the task complete on the server (its finishedAt): whole ms, one clock for the machine. */
  ms: number;
  /** POST sent → the client's poll seeing it complete (includes up to POLL_MS of waiting for the next poll). */
  seenMs: number;
  /** POST → its answer (the task id), client-side. */
  postAnsweredMs: number;
  stages: Stages;
}

interface OperationView {
  queuedAt: number;
  sentAt?: number;
  resultAt?: number;
  finishedAt?: number;
}

async function deployThroughScaleAgent(base: string, image: string): Promise<Run> {
  const body = [
    {
      deployManifest: {
        account: ACCOUNT,
        cloudProvider: 'kubernetes',
        source: 'text',
        moniker: { app: 'bench' },
        manifests: [deployment(NAMESPACE, 'web', image)],
      },
    },
  ];
  const t0 = performance.now();
  const wall0 = Date.now();
  const res = await fetch(`${base}/kubernetes/ops`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const { id } = (await res.json()) as { id: string };
  const postAnsweredMs = performance.now() - t0;
  let seenMs: number;
  let seenAt: number;
  for (;;) {
    const t = (await (await fetch(`${base}/task/${id}`)).json()) as {
      status: { completed: boolean; failed: boolean };
      history: { status: string }[];
    };
    if (t.status.completed) {
      seenMs = performance.now() - t0;
      seenAt = Date.now();
      if (t.status.failed) throw new Error(`deploy task failed: ${t.history.map((h) => h.status).join(' / ')}`);
      break;
    }
    await sleep(POLL_MS);
  }
  const op = (await (await fetch(`${base}/armory/agent/operations/${id}.0`)).json()) as OperationView;
  if (op.sentAt === undefined || op.resultAt === undefined || op.finishedAt === undefined) {
    throw new Error(`operation ${id}.0 lacks its timestamps: ${JSON.stringify(op)}`);
  }
  return {
    ms: op.finishedAt - wall0,
    seenMs,
    postAnsweredMs,
    stages: {
      postToQueued: op.queuedAt - wall0,
      queuedToSent: op.sentAt - op.queuedAt,
      sentToResult: op.resultAt - op.sentAt,
      resultToBarrier: op.finishedAt - op.resultAt,
      barrierToSeen: seenAt - op.finishedAt,
    },
  };
}

/**
 * The same deploy through the relay floor (lib/bare-relay-main.ts), timed as ours: POST → done on the front
 * (Date.now()), and → seen by the same polling.
 */
async function deployThroughRelay(
  base: string,
  image: string,
): Promise<{ ms: number; seenMs: number; applyMs: number }> {
  const t0 = performance.now();
  const wall0 = Date.now();
  const res = await fetch(`${base}/ops`, { method: 'POST', body: JSON.stringify({ image }) });
  const { id } = (await res.json()) as { id: string };
  for (;;) {
    const t = (await (await fetch(`${base}/task/${id}`)).json()) as {
      completed: boolean;
      applyMs: number;
      doneAt: number;
    };
    if (t.completed) return { ms: t.doneAt - wall0, seenMs: performance.now() - t0, applyMs: t.applyMs };
    await sleep(POLL_MS);
  }
}

const round = (n: number): number => Math.round(n * 1000) / 1000;
/** a ÷ b to two decimals, as every ratio of this benchmark is reported. */
const ratio = (a: number, b: number): number => Math.round((a / b) * 100) / 100;

/** Per stage p50/p99, and each of the slowest runs (the ones at and above the p99) split into its stages. */
function breakdown(runs: Run[]) {
  const perStage = Object.fromEntries(
    STAGES.map((s) => {
      const d = distribution(runs.map((r) => r.stages[s]));
      return [s, { p50: d.p50, p99: d.p99, max: d.max }];
    }),
  );
  const slowest = [...runs]
    .sort((a, b) => b.ms - a.ms)
    .slice(0, Math.max(3, Math.ceil(runs.length / 100)))
    .map((r) => ({ ms: round(r.ms), postAnsweredMs: round(r.postAnsweredMs), ...r.stages }));
  // Nearest rank, as distribution() picks its p50.
  const median = [...runs].sort((a, b) => a.ms - b.ms)[Math.max(0, Math.ceil(runs.length / 2) - 1)]!;
  return {
    stagesMs: perStage,
    postAnsweredMs: distribution(runs.map((r) => r.postAnsweredMs)),
    p50Run: { ms: round(median.ms), postAnsweredMs: round(median.postAnsweredMs), ...median.stages },
    slowestRuns: slowest,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-operations-'));
  const cp = await ControlPlane.start({ dir: join(dir, 'cp'), log: (l) => progress(l) });
  const stops: (() => Promise<unknown>)[] = [() => cp.stop()];
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(cp.kubeconfig);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: NAMESPACE } } });
    const objects = KubernetesObjectApi.makeApiClient(kc);
    const h2 = await bareHttp2Applier(kc, NAMESPACE, 'bare-h2');
    stops.unshift(async () => h2.close());

    let storage: { type: 'memory' } | { type: 'mysql'; url: string } = { type: 'memory' };
    if (STORE === 'mysql') {
      const maria = await MariaDb.start({ log: (l) => progress(l) });
      stops.unshift(() => maria.stop());
      storage = { type: 'mysql', url: (await createDatabase(maria.url, 'bench_operations')).url };
    }
    const server = await PluginServerProcess.start({ dir, storage, extra: { logLevel: 'warn' } });
    stops.unshift(() => server.stop());
    const agent = await AgentProcess.start({
      dir,
      serverAddress: server.grpcAddress,
      agentId: 'bench-ops',
      accounts: [{ name: ACCOUNT, kubeconfigFile: cp.kubeconfig, namespaces: [NAMESPACE] }],
      asInstalled: true,
    });
    stops.unshift(() => agent.stop());

    const front = await startScript('bench/lib/bare-relay-main.ts', ['front']);
    stops.unshift(async () => front.child.kill('SIGTERM'));
    const [relayBase, relayGrpc] = front.line.split(' ') as [string, string];
    const relayAgent = await startScript('bench/lib/bare-relay-main.ts', [
      'agent',
      relayGrpc,
      cp.kubeconfig,
      NAMESPACE,
    ]);
    stops.unshift(async () => relayAgent.child.kill('SIGTERM'));

    // Alternating, one of each per round: a machine whose load drifts during the run (other work, the controller
    // catching up) weighs on both series alike, so their ratio is the same run's.
    progress(`scale-agent deploys and bare server-side applies, alternating: ${WARMUP} warm-up + ${RUNS} rounds`);
    const runs: Run[] = [];
    const bare: number[] = [];
    const bareH2: number[] = [];
    const relay: number[] = [];
    const relayApply: number[] = [];
    const relaySeen: number[] = [];
    const bareH2AsDeployed: number[] = [];
    let h2AsDeployed: Awaited<ReturnType<typeof bareHttp2Applier>> | undefined;
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const run = await deployThroughScaleAgent(server.httpBase, `registry.example.com/web:${i}`);
      if (!h2AsDeployed) {
        // The manifest as our deploy submitted it, read from what the first deploy left.
        const live = await objects.read({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { name: 'web', namespace: NAMESPACE },
        });
        h2AsDeployed = await bareHttp2Applier(kc, NAMESPACE, 'bare-h2-as-deployed', asDeployedBy(live));
        const closing = h2AsDeployed;
        stops.unshift(async () => closing.close());
      }
      const t0 = performance.now();
      await objects.patch(
        deployment(NAMESPACE, 'bare', `registry.example.com/web:${i}`),
        undefined,
        undefined,
        'bench',
        true,
        PatchStrategy.ServerSideApply,
      );
      const bareMs = performance.now() - t0;
      const t1 = performance.now();
      await h2.apply(`registry.example.com/web:${i}`);
      const bareH2Ms = performance.now() - t1;
      const t2 = performance.now();
      await h2AsDeployed.apply(`registry.example.com/web:${i}`);
      const bareH2AsDeployedMs = performance.now() - t2;
      const relayRun = await deployThroughRelay(relayBase, `registry.example.com/web:${i}`);
      if (i >= WARMUP) {
        relay.push(relayRun.ms);
        relaySeen.push(relayRun.seenMs);
        relayApply.push(relayRun.applyMs);
        runs.push(run);
        bare.push(bareMs);
        bareH2.push(bareH2Ms);
        bareH2AsDeployed.push(bareH2AsDeployedMs);
      }
    }
    const viaScaleAgent = runs.map((r) => r.ms);

    const ours = distribution(viaScaleAgent);
    const baseline = distribution(bare);
    const baselineH2 = distribution(bareH2);
    const baselineH2AsDeployed = distribution(bareH2AsDeployed);
    const relayFloor = distribution(relay);
    const above = {
      p50: round(ours.p50 - baseline.p50),
      p99: round(ours.p99 - baseline.p99),
    };
    const ratios = {
      p50VsBareApply: ratio(ours.p50, baseline.p50),
      p99VsBareApply: ratio(ours.p99, baseline.p99),
      p50VsBareHttp2Apply: ratio(ours.p50, baselineH2.p50),
      p99VsBareHttp2Apply: ratio(ours.p99, baselineH2.p99),
      p50VsBareHttp2ApplyAsDeployed: ratio(ours.p50, baselineH2AsDeployed.p50),
      p99VsBareHttp2ApplyAsDeployed: ratio(ours.p99, baselineH2AsDeployed.p99),
      bareHttp2ApplyAsDeployedP50VsPlain: ratio(baselineH2AsDeployed.p50, baselineH2.p50),
      p50VsRelayFloor: ratio(ours.p50, relayFloor.p50),
      p99VsRelayFloor: ratio(ours.p99, relayFloor.p99),
      relayFloorP50VsBareHttp2Apply: ratio(relayFloor.p50, baselineH2.p50),
      relayFloorP99VsBareHttp2Apply: ratio(relayFloor.p99, baselineH2.p99),
    };
    emit({
      name: 'operations',
      params: { runs: RUNS, warmup: WARMUP, store: STORE, pollMs: POLL_MS, quick: Boolean(f.quick) },
      machine: machineInfo(),
      versions: versions(),
      figures: {
        postToTaskCompleteMs: ours,
        postToSeenMs: distribution(runs.map((r) => r.seenMs)),
        aboveBareApplyMs: above,
        breakdown: breakdown(runs),
      },
      baseline: {
        bareServerSideApplyMs: baseline,
        bareHttp2ServerSideApplyMs: baselineH2,
        bareHttp2ServerSideApplyAsDeployedMs: baselineH2AsDeployed,
        relayFloorMs: relayFloor,
        relayFloorSeenMs: distribution(relaySeen),
        relayFloorApplyMs: distribution(relayApply),
      },
      ratios,
      // Against the HTTP/2 baseline, the stricter one (the agent's own transport, nothing around it).
      goal: { p50VsBareHttp2Apply: '<= 1.3', p99VsBareHttp2Apply: '<= 2' },
      met: ratios.p50VsBareHttp2Apply <= 1.3 && ratios.p99VsBareHttp2Apply <= 2,
      notes: [
        "Each scale-agent run includes the REST POST, validation, the operation down the gRPC stream, discovery-cached server-side apply by the agent, the result back, and the wait for the cache to hold the new resourceVersion (the consistency barrier). postToTaskCompleteMs runs from the POST to the task's finishedAt on the server (whole ms, the machine's one clock); postToSeenMs to the client's poll seeing it, one poll every pollMs ms (at 1 ms the polling loads the machine while a deploy is measured, not while the bare applies are).",
        "breakdown: each run split at the client POST, the operation record's queuedAt / sentAt / resultAt / finishedAt (whole ms, server Date.now()) and the client seeing the task complete: postToQueued, queuedToSent, sentToResult (agent apply incl. its API request), resultToBarrier, barrierToSeen; slowestRuns are the runs at and above the p99 (at least 3).",
        'The baselines are a single server-side apply PATCH to the same API server (no cache, no barrier), each of a Deployment of its own: from @kubernetes/client-node (HTTP/1.1), and over one warm node:http2 connection with the same credentials (the transport the agent uses); each round runs one scale-agent deploy and then one of each, so all the series see the same load. The goal is judged against the HTTP/2 one.',
        "bareHttp2ServerSideApplyAsDeployedMs: the HTTP/2 apply of the Deployment as scale-agent's deploy submits it (the labels and annotations the deploy wrote, copied from the object the first deploy left: Spinnaker's moniker and artifact ones, as Clouddriver writes them, and the config hash), in the same round: what the API server takes for the request itself, whose extra fields the plain baseline does not send.",
        "relayFloorMs: the same deploy through scale-agent's architecture built from bare parts (bench/lib/bare-relay-main.ts): a node:http front process and an agent process joined by one grpc-js bidi stream, the agent applying over warm node:http2, timed like ours (POST → done on the front, and → seen by the same polling); no validation, task store, cache, barrier, logs or metrics; relayFloorApplyMs is its agent's apply alone, timed in that process. relayFloorP50/P99VsBareHttp2Apply is what the hops and the poll cost on this machine by themselves; p50VsRelayFloor what scale-agent adds above them.",
      ],
    });
  } finally {
    for (const s of stops) await s().catch(() => undefined);
  }
}

await main();
