/**
 * A seeded schedule of what happens to a replicated install: the order and timing of the agents' registrations, then
 * replica restarts and kills, kills of the agent holding an account, dynamic accounts created and deleted on random
 * replicas, partitions of one replica's MySQL link and clock skew on one replica. Pure: the same seed and shape give
 * the same plan, so a failing seed reproduces (run-schedule.ts plays it against real processes).
 *
 * Faults on replicas do not overlap (at most one replica disrupted at a time, as a PodDisruptionBudget of one would
 * allow), and at most one agent per group is down at a time: the protocol must keep serving through each, and the
 * checker may then demand that an account never goes unserved while one of its agents is connected.
 */

export interface ScheduleShape {
  replicas: number;
  /** Agent groups, each serving one account. */
  groups: number;
  agentsPerGroup: number;
  /** The span faults are scheduled in, after the registrations. */
  durationMs: number;
  leaseSeconds: number;
  /** Which kinds of fault the plan may draw (default: every kind). */
  kinds?: FaultKind[];
}

export type FaultKind =
  | 'restart-replica'
  | 'kill-holder-replica'
  | 'kill-active-agent'
  | 'partition'
  | 'skew'
  | 'create-dynamic'
  | 'delete-dynamic'
  | 'impostor';

export const FAULT_KINDS: FaultKind[] = [
  'restart-replica',
  'kill-holder-replica',
  'kill-active-agent',
  'partition',
  'skew',
  'create-dynamic',
  'delete-dynamic',
  'impostor',
];

/** One thing done at `at` ms from the start; `holdMs` later it is undone (a killed process restarted, a link back). */
export type Step =
  | { at: number; do: 'start-agent'; group: number; member: number }
  /** An agent of another cluster offering group's account name (a duplicate-cluster claim), stopped after holdMs. */
  | { at: number; do: 'impostor'; group: number; holdMs: number }
  | { at: number; do: 'restart-replica'; replica: number }
  | { at: number; do: 'rolling-restart' }
  | { at: number; do: 'kill-holder-replica'; group: number; holdMs: number }
  | { at: number; do: 'kill-active-agent'; group: number; holdMs: number }
  | { at: number; do: 'partition'; replica: number; holdMs: number }
  | { at: number; do: 'skew'; replica: number; seconds: number; holdMs: number }
  | { at: number; do: 'create-dynamic'; replica: number; name: string }
  | { at: number; do: 'delete-dynamic'; replica: number; name: string };

/** A small, well-mixed 32-bit generator (splitmix32): enough to pick schedules, reproducible from one integer. */
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return ((z ^ (z >>> 16)) >>> 0) / 0x1_0000_0000;
  };
}

/** Registrations happen before this point of a schedule, faults from it on (the runner waits for every agent). */
export const FAULTS_FROM_MS = 3_000;

/** How long after a replica fault is lifted before the next may start: the restarted replica ready, leases renewed. */
const REPLICA_SETTLE_MS = 4_000;

export function planSchedule(seed: number, shape: ScheduleShape): Step[] {
  const rnd = random(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const steps: Step[] = [];
  const leaseMs = shape.leaseSeconds * 1000;

  // Registrations: every agent starts within the first two seconds, in a seeded order, so both agents of a group
  // often offer their account at once (the race the protocol must settle).
  for (let g = 0; g < shape.groups; g++) {
    for (let m = 0; m < shape.agentsPerGroup; m++)
      steps.push({ at: int(0, 2_000), do: 'start-agent', group: g, member: m });
  }

  const kinds = shape.kinds ?? FAULT_KINDS;
  // Half the seeds race a claim of one account name by another cluster against its group's registrations.
  if (kinds.includes('impostor') && rnd() < 0.5) {
    steps.push({ at: int(0, 2_500), do: 'impostor', group: int(0, shape.groups - 1), holdMs: int(3_000, 8_000) });
  }
  let replicaFreeAt = FAULTS_FROM_MS;
  const groupFreeAt = new Array<number>(shape.groups).fill(FAULTS_FROM_MS);
  const dynamicLive: string[] = [];
  let dynamicSeq = 0;
  for (let t = FAULTS_FROM_MS + int(0, 1_500); t < FAULTS_FROM_MS + shape.durationMs; t += int(700, 3_000)) {
    const kind = pick(kinds.filter((k) => k !== 'impostor'));
    if (kind === undefined) break;
    const replica = int(0, shape.replicas - 1);
    switch (kind) {
      case 'restart-replica':
        if (t < replicaFreeAt) continue;
        steps.push({ at: t, do: 'restart-replica', replica });
        replicaFreeAt = t + REPLICA_SETTLE_MS;
        break;
      case 'kill-holder-replica': {
        if (t < replicaFreeAt) continue;
        const holdMs = int(500, 3_000);
        steps.push({ at: t, do: 'kill-holder-replica', group: int(0, shape.groups - 1), holdMs });
        replicaFreeAt = t + holdMs + REPLICA_SETTLE_MS;
        break;
      }
      case 'partition':
        if (t < replicaFreeAt) continue;
        // Twice the lease: long enough for peers to see the replica's leases expire.
        steps.push({ at: t, do: 'partition', replica, holdMs: 2 * leaseMs });
        replicaFreeAt = t + 2 * leaseMs + REPLICA_SETTLE_MS;
        break;
      case 'skew': {
        if (t < replicaFreeAt) continue;
        const holdMs = int(3_000, 8_000);
        steps.push({ at: t, do: 'skew', replica, seconds: pick([30, -30]), holdMs });
        replicaFreeAt = t + holdMs + REPLICA_SETTLE_MS;
        break;
      }
      case 'kill-active-agent': {
        const group = int(0, shape.groups - 1);
        if (t < groupFreeAt[group]!) continue;
        const holdMs = int(500, 4_000);
        steps.push({ at: t, do: 'kill-active-agent', group, holdMs });
        groupFreeAt[group] = t + holdMs + REPLICA_SETTLE_MS;
        break;
      }
      case 'create-dynamic': {
        const name = `dyn-${seed}-${dynamicSeq++}`;
        steps.push({ at: t, do: 'create-dynamic', replica, name });
        dynamicLive.push(name);
        break;
      }
      case 'delete-dynamic': {
        if (!dynamicLive.length) continue;
        const name = dynamicLive.splice(int(0, dynamicLive.length - 1), 1)[0]!;
        steps.push({ at: t, do: 'delete-dynamic', replica, name });
        break;
      }
    }
  }
  return steps.sort((a, b) => a.at - b.at);
}

/** How long each step holds its fault (0: a one-off action). */
export function holdOf(step: Step): number {
  return 'holdMs' in step ? step.holdMs : 0;
}

/** One line per step, for the log and for a failing seed's report. */
export function describeStep(step: Step): string {
  const at = `+${(step.at / 1000).toFixed(1)}s`;
  switch (step.do) {
    case 'start-agent':
      return `${at} start agent g${step.group}-${step.member}`;
    case 'impostor':
      return `${at} an agent of another cluster offers g${step.group}'s account name, stopped after ${step.holdMs} ms`;
    case 'restart-replica':
      return `${at} restart replica-${step.replica}`;
    case 'rolling-restart':
      return `${at} rolling restart of every replica`;
    case 'kill-holder-replica':
      return `${at} SIGKILL the replica holding g${step.group}'s account, back after ${step.holdMs} ms`;
    case 'kill-active-agent':
      return `${at} SIGKILL g${step.group}'s active agent, back after ${step.holdMs} ms`;
    case 'partition':
      return `${at} blackhole replica-${step.replica}'s MySQL link for ${step.holdMs} ms`;
    case 'skew':
      return `${at} skew replica-${step.replica}'s clock ${step.seconds > 0 ? '+' : ''}${step.seconds} s for ${step.holdMs} ms`;
    case 'create-dynamic':
      return `${at} create dynamic account ${step.name} on replica-${step.replica}`;
    case 'delete-dynamic':
      return `${at} delete dynamic account ${step.name} on replica-${step.replica}`;
  }
}
