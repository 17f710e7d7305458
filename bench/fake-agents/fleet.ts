/**
 * Many fake agents at once: connect N agents (in waves, as a real fleet rolls out), sync M accounts × K
 * objects each, then hold a steady change rate for a while. Reports what the generator itself sent, so the
 * server side is what gets measured.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChannelCredentials } from '@grpc/grpc-js';
import { distribution, type Distribution } from '../lib/report.js';
import { FakeAgent } from './fake-agent.js';

export interface FleetOptions {
  address: string;
  credentials?: ChannelCredentials;
  serverName?: string;
  agents: number;
  accountsPerAgent: number;
  objectsPerAccount: number;
  objectBytes: number;
  batchSize: number;
  /** Steady-state changes per second per agent (sent as one batch per second). */
  changesPerSecPerAgent: number;
  steadySeconds: number;
  /** Agents connecting at the same time. */
  wave: number;
  idPrefix: string;
  /** Called once every agent's sync is acknowledged, before the steady phase (e.g. to sample the server's cost). */
  onSynced?: () => Promise<void> | void;
  /** Called once per second during the steady phase (e.g. to probe REST latency while loaded). */
  onTick?: (second: number) => Promise<void> | void;
}

export interface FleetReport {
  agents: number;
  accepted: number;
  failedToConnect: number;
  rejectedAccounts: number;
  connectSeconds: number;
  syncSeconds: number;
  syncedObjects: number;
  steady: { seconds: number; sentChanges: number; sentChangesPerSec: number; targetChangesPerSec: number };
  ackLatencyMs: Distribution;
  errors: string[];
  agentsHandle: FakeAgent[];
}

export async function runFleet(o: FleetOptions): Promise<FleetReport> {
  const agents: FakeAgent[] = [];
  const errors: string[] = [];
  let rejected = 0;
  const t0 = performance.now();
  for (let i = 0; i < o.agents; i += o.wave) {
    const wave = Array.from({ length: Math.min(o.wave, o.agents - i) }, (_, j) => {
      const a = new FakeAgent({
        address: o.address,
        credentials: o.credentials,
        serverName: o.serverName,
        agentId: `${o.idPrefix}-${i + j}`,
        accounts: o.accountsPerAgent,
        objectsPerAccount: o.objectsPerAccount,
        objectBytes: o.objectBytes,
        batchSize: o.batchSize,
        accountPrefix: o.idPrefix,
      });
      return a.connect().then(
        (w) => {
          rejected += w.rejectedAccounts.length;
          agents.push(a);
        },
        (e: unknown) => {
          errors.push(String(e));
          a.close();
        },
      );
    });
    await Promise.all(wave);
  }
  const connectSeconds = (performance.now() - t0) / 1000;

  const t1 = performance.now();
  for (let i = 0; i < agents.length; i += o.wave) {
    await Promise.all(agents.slice(i, i + o.wave).map((a) => a.sync().catch((e: unknown) => errors.push(String(e)))));
  }
  const syncSeconds = (performance.now() - t1) / 1000;
  await o.onSynced?.();

  for (const a of agents) a.trackAckLatency = true;
  const before = agents.reduce((n, a) => n + a.stats.sentChanges, 0);
  const t2 = performance.now();
  for (let s = 0; s < o.steadySeconds; s++) {
    const tick = performance.now();
    // Spread each agent's batch over the second, as independent clusters would.
    await Promise.all(
      agents.map(async (a, idx) => {
        await sleep(Math.floor((idx / agents.length) * 900));
        await a.changeBatch(o.changesPerSecPerAgent).catch((e: unknown) => errors.push(String(e)));
      }),
    );
    await o.onTick?.(s);
    const left = 1000 - (performance.now() - tick);
    if (left > 0) await sleep(left);
  }
  await Promise.all(agents.map((a) => a.drained().catch((e: unknown) => errors.push(String(e)))));
  const steadySeconds = (performance.now() - t2) / 1000;
  const sent = agents.reduce((n, a) => n + a.stats.sentChanges, 0) - before;
  return {
    agents: o.agents,
    accepted: agents.length,
    failedToConnect: o.agents - agents.length,
    rejectedAccounts: rejected,
    connectSeconds,
    syncSeconds,
    syncedObjects: agents.length * o.accountsPerAgent * o.objectsPerAccount,
    steady: {
      seconds: steadySeconds,
      sentChanges: sent,
      sentChangesPerSec: sent / steadySeconds,
      targetChangesPerSec: agents.length * o.changesPerSecPerAgent,
    },
    ackLatencyMs: distribution(agents.flatMap((a) => a.ackLatenciesMs)),
    errors: [...new Set(errors)].slice(0, 10),
    agentsHandle: agents,
  };
}
