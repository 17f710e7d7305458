/**
 * Polls /armory/accounts and /armory/agents on every replica, one round after another, for as long as a schedule runs,
 * and hands each round to the OwnershipJudge (ownership-judge.ts), which decides what is a violation.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { OwnershipJudge, type AccountSeen, type ReplicaSeen, type SessionSeen, type World } from './ownership-judge.js';
import type { Replica } from './replica-rig.js';

async function getJson<T>(url: string): Promise<T | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return res.ok ? ((await res.json()) as T) : undefined;
  } catch {
    return undefined;
  }
}

async function look(r: Replica): Promise<ReplicaSeen> {
  const disturbed = r.disturbed;
  const [accounts, agents] = await Promise.all([
    getJson<{ items: AccountSeen[] }>(`${r.server.httpBase}/armory/accounts?limit=1000`),
    getJson<(SessionSeen & { heldBy: unknown })[]>(`${r.server.httpBase}/armory/agents`),
  ]);
  return {
    replica: r.name,
    // Disturbed at either end of the round trip: a restart that began meanwhile makes the answers a mix.
    disturbed: disturbed || r.disturbed,
    accounts: accounts?.items,
    sessions: agents?.filter((a) => a.heldBy === 'local'),
  };
}

export class OwnershipChecker {
  readonly judge: OwnershipJudge;
  private running = false;
  private loop?: Promise<void>;

  constructor(
    private readonly replicas: Replica[],
    private readonly world: () => World,
    leaseSeconds: number,
    gracePeriodSeconds: number,
    private readonly intervalMs = 250,
  ) {
    this.judge = new OwnershipJudge(leaseSeconds * 1000, gracePeriodSeconds * 1000);
  }

  start(): void {
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const seen = await Promise.all(this.replicas.map(look));
        this.judge.observe(Date.now(), this.world(), seen);
        await sleep(this.intervalMs);
      }
    })();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }
}
