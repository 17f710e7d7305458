/**
 * One fault, end to end: churn and REST operations running, the fault injected and held, the plugin-server probed
 * while it lasts (ready? reads served?), the fault lifted, the load stopped so the API server's state holds still,
 * then the time until the cache equals it, every operation settled and checked in the cluster, and the processes'
 * RSS and open descriptors sampled.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CacheDiff } from '../cache-checker.js';
import type { Fault } from './catalogue.js';
import { Churn, type ChurnStats } from './churn.js';
import { OperationsLoad, type OpsReport } from './operations.js';
import { sampleHeap, sampleProcess, type ProcessSample } from './process-sample.js';
import { ACCOUNT, type FaultRig } from './rig.js';

export interface DuringFault {
  /** /readyz status while the fault held (0: no answer within 3 s). */
  readyz: number;
  readyzReasons?: string[];
  /** A cache read (/manifests) while the fault held. */
  read: number;
}

export interface FaultResult {
  id: string;
  fault: string;
  target: string;
  /** How long lifting the fault took (a restart until ready; 0-ish for a toxic or SIGCONT). */
  recoverMs: number;
  /** From the fault lifted to the cache equal to the API server. */
  convergeMs: number;
  /** The checker's last diff: equal, over this many objects. */
  diff: CacheDiff;
  during: DuringFault;
  /** From the fault's own check (Fault.observe), when it has one: did it bite, and the evidence. */
  bite?: { bit: boolean; note: string };
  churn: ChurnStats;
  ops: OpsReport;
  processes: Record<string, ProcessSample | undefined>;
}

export class Load {
  readonly churn: Churn;
  readonly ops: OperationsLoad;

  private constructor(readonly rig: FaultRig) {
    this.churn = new Churn(rig.kubeConfig(), rig.namespaces);
    this.ops = new OperationsLoad(rig.server.httpBase, ACCOUNT, rig.namespaces[0]!);
  }

  static async create(rig: FaultRig): Promise<Load> {
    const load = new Load(rig);
    await load.ops.prepare(rig.kubeConfig());
    return load;
  }

  start(): void {
    this.churn.start();
    this.ops.start();
  }

  async stop(): Promise<void> {
    await Promise.all([this.churn.stop(), this.ops.stop()]);
  }
}

async function status(url: string): Promise<{ status: number; body: unknown }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(3_000) });
    return { status: res.status, body: await res.json().catch(() => undefined) };
  } catch {
    return { status: 0, body: undefined };
  }
}

async function probe(rig: FaultRig): Promise<DuringFault> {
  const base = rig.server.httpBase;
  const [ready, read] = await Promise.all([
    status(`${base}/readyz`),
    status(`${base}/manifests/${ACCOUNT}/${rig.namespaces[0]}/${encodeURIComponent('configMap kube-root-ca.crt')}`),
  ]);
  return {
    readyz: ready.status,
    readyzReasons: (ready.body as { reasons?: string[] } | undefined)?.reasons,
    read: read.status,
  };
}

export async function runFault(
  rig: FaultRig,
  load: Load,
  fault: Fault,
  opts: { leadMs?: number; convergeTimeoutMs?: number; settleTimeoutMs?: number } = {},
): Promise<FaultResult> {
  const churnBefore = { ...load.churn.stats };
  load.start();
  await sleep(opts.leadMs ?? 1_500);
  await fault.inject(rig);
  // Probe in the middle of the hold, without letting a hanging probe stretch it.
  const probed = sleep(fault.holdMs / 2).then(() => probe(rig));
  await sleep(fault.holdMs);
  const bite = await fault.observe?.(rig);
  const tRecover = Date.now();
  await fault.recover(rig);
  const recovered = Date.now();
  await load.stop();
  const diff = await rig.converge(opts.convergeTimeoutMs ?? 120_000);
  const convergeMs = Date.now() - recovered;
  const ops = await load.ops.settle(rig.kubeConfig(), opts.settleTimeoutMs ?? 150_000);
  const processes = Object.fromEntries(Object.entries(rig.pids()).map(([name, pid]) => [name, sampleProcess(pid)]));
  for (const [name, url, prefix] of rig.metricsEndpoints()) {
    const heap = await sampleHeap(url, prefix);
    if (processes[name] && heap) processes[name] = { ...processes[name], heap };
  }
  return {
    id: fault.id,
    fault: fault.fault,
    target: fault.target,
    recoverMs: recovered - tRecover,
    convergeMs,
    diff,
    during: await probed,
    bite,
    churn: {
      writes: load.churn.stats.writes - churnBefore.writes,
      failed: load.churn.stats.failed - churnBefore.failed,
    },
    ops,
    processes,
  };
}
