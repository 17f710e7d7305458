/**
 * `npm run bench:operations [-- --quick] [--runs N]`
 *
 * POST → task complete for a one-Deployment deploy: `POST /kubernetes/ops` with a deployManifest (a new image each
 * run, so every run is a real rollout step: new generation and resourceVersion), then `GET /task/{id}` back to back
 * until `status.completed`. That covers routing down the agent's stream, the agent's server-side apply, the result
 * coming back and the consistency barrier (the cache holding the new resourceVersion). Baseline, same run, same
 * control plane: a bare server-side apply of the same manifest from a @kubernetes/client-node client. Everything
 * real: control plane, agent and plugin-server processes (memory store). Prints one JSON result.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { ControlPlane } from '../test/infra/control-plane.js';
import { AgentProcess, PluginServerProcess } from '../test/infra/processes.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';

const f = flags({ runs: { type: 'string' } });
const RUNS = Number(f.runs ?? (f.quick ? 10 : 100));
const WARMUP = 3;
const NAMESPACE = 'bench-ops';
const ACCOUNT = 'bench-ops';

function deployment(name: string, image: string): KubernetesObject & Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NAMESPACE },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'main', image }] } },
    },
  };
}

async function deployThroughScaleAgent(base: string, image: string): Promise<number> {
  const body = [
    {
      deployManifest: {
        account: ACCOUNT,
        cloudProvider: 'kubernetes',
        source: 'text',
        moniker: { app: 'bench' },
        manifests: [deployment('web', image)],
      },
    },
  ];
  const t0 = performance.now();
  const res = await fetch(`${base}/kubernetes/ops`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const { id } = (await res.json()) as { id: string };
  for (;;) {
    const t = (await (await fetch(`${base}/task/${id}`)).json()) as {
      status: { completed: boolean; failed: boolean };
      history: { status: string }[];
    };
    if (t.status.completed) {
      const ms = performance.now() - t0;
      if (t.status.failed) throw new Error(`deploy task failed: ${t.history.map((h) => h.status).join(' / ')}`);
      return ms;
    }
    // 1 ms between polls: the client must not starve the processes it measures of CPU.
    await sleep(1);
  }
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

    const server = await PluginServerProcess.start({ dir, extra: { logLevel: 'warn' } });
    stops.unshift(() => server.stop());
    const agent = await AgentProcess.start({
      dir,
      serverAddress: server.grpcAddress,
      agentId: 'bench-ops',
      accounts: [{ name: ACCOUNT, kubeconfigFile: cp.kubeconfig, namespaces: [NAMESPACE] }],
      extra: {},
    });
    stops.unshift(() => agent.stop());

    progress(`scale-agent deploys: ${WARMUP} warm-up + ${RUNS} runs`);
    const viaScaleAgent: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const ms = await deployThroughScaleAgent(server.httpBase, `registry.example.com/web:${i}`);
      if (i >= WARMUP) viaScaleAgent.push(ms);
    }

    progress(`bare server-side applies: ${WARMUP} warm-up + ${RUNS} runs`);
    const bare: number[] = [];
    for (let i = 0; i < WARMUP + RUNS; i++) {
      const t0 = performance.now();
      await objects.patch(
        deployment('bare', `registry.example.com/web:${i}`),
        undefined,
        undefined,
        'bench',
        true,
        PatchStrategy.ServerSideApply,
      );
      if (i >= WARMUP) bare.push(performance.now() - t0);
    }

    const ours = distribution(viaScaleAgent);
    const baseline = distribution(bare);
    const above = {
      p50: Math.round((ours.p50 - baseline.p50) * 1000) / 1000,
      p99: Math.round((ours.p99 - baseline.p99) * 1000) / 1000,
    };
    emit({
      name: 'operations',
      params: { runs: RUNS, warmup: WARMUP, store: 'memory', quick: Boolean(f.quick) },
      machine: machineInfo(),
      versions: versions(),
      figures: { postToTaskCompleteMs: ours, aboveBareApplyMs: above },
      baseline: { bareServerSideApplyMs: baseline },
      ratios: { p50VsBareApply: Math.round((ours.p50 / baseline.p50) * 100) / 100 },
      goal: {
        'POST to task complete': 'reported as p50/p99 over 100 runs; no numeric goal',
      },
      met: true,
      notes: [
        'Each scale-agent run includes the REST POST, validation, the operation down the gRPC stream, discovery-cached server-side apply by the agent, the result back, and the wait for the cache to hold the new resourceVersion (the consistency barrier); the task is polled back to back with 1 ms sleeps.',
        'The baseline is a single server-side apply PATCH from @kubernetes/client-node to the same API server (no cache, no barrier).',
      ],
    });
  } finally {
    for (const s of stops) await s().catch(() => undefined);
  }
}

await main();
