/**
 * The replica rows of the fault matrix: one fault each, on a replicated install under churn and operations, with
 * dynamic accounts created and deleted on random replicas throughout. Written as schedules (schedule.ts), so the same
 * runner and checker play them as the randomized seeds; `seed` picks only the registrations' order and the dynamic
 * accounts' replicas.
 */
import { FAULTS_FROM_MS, random, type ScheduleShape, type Step } from './schedule.js';

export interface ReplicaFaultRow {
  id: string;
  fault: string;
  steps(seed: number, shape: ScheduleShape): Step[];
}

/** Registrations in the first two seconds (seeded order), then the fault at 5 s, dynamic changes every ~1.5 s. */
function row(id: string, fault: string, faultSteps: (shape: ScheduleShape) => Step[]): ReplicaFaultRow {
  return {
    id,
    fault,
    steps(seed, shape) {
      const rnd = random(seed);
      const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
      const steps: Step[] = [];
      for (let g = 0; g < shape.groups; g++) {
        for (let m = 0; m < shape.agentsPerGroup; m++) {
          steps.push({ at: int(0, 2_000), do: 'start-agent', group: g, member: m });
        }
      }
      steps.push(...faultSteps(shape));
      const live: string[] = [];
      for (let t = FAULTS_FROM_MS + 500, n = 0; t < FAULTS_FROM_MS + shape.durationMs; t += int(1_000, 2_000)) {
        const replica = int(0, shape.replicas - 1);
        if (live.length && rnd() < 0.4) {
          steps.push({ at: t, do: 'delete-dynamic', replica, name: live.splice(int(0, live.length - 1), 1)[0]! });
        } else {
          const name = `dyn-${id.replace(/[^a-z0-9]/g, '')}-${seed}-${n++}`;
          steps.push({ at: t, do: 'create-dynamic', replica, name });
          live.push(name);
        }
      }
      return steps.sort((a, b) => a.at - b.at);
    },
  };
}

/** Ids are unique once reduced to [a-z0-9] (each row's account names and agentIds are made from its id). */
export const REPLICA_FAULT_ROWS: ReplicaFaultRow[] = [
  row('replicas:rolling-restart', 'rolling restart of every replica under churn', () => [
    { at: 5_000, do: 'rolling-restart' },
  ]),
  row('replicas:sigkill-holder', 'SIGKILL of the replica holding an account', () => [
    { at: 5_000, do: 'kill-holder-replica', group: 0, holdMs: 2_000 },
  ]),
  row('replicas:sigkill-active-agent', 'SIGKILL of the active agent', () => [
    { at: 5_000, do: 'kill-active-agent', group: 0, holdMs: 3_000 },
  ]),
  row('replicas:partition', "one replica's MySQL link blackholed for 2× the lease", (shape) => [
    { at: 5_000, do: 'partition', replica: 1, holdMs: 2 * shape.leaseSeconds * 1000 },
  ]),
  row('replicas:clock-ahead', 'clock skew +30 s on one replica', () => [
    { at: 5_000, do: 'skew', replica: 2, seconds: 30, holdMs: 8_000 },
  ]),
  row('replicas:clock-behind', 'clock skew −30 s on one replica', () => [
    { at: 5_000, do: 'skew', replica: 2, seconds: -30, holdMs: 8_000 },
  ]),
];

export function replicaFaultRow(id: string): ReplicaFaultRow {
  const r = REPLICA_FAULT_ROWS.find((x) => x.id === id);
  if (!r) throw new Error(`no replica fault row ${id}; known: ${REPLICA_FAULT_ROWS.map((x) => x.id).join(', ')}`);
  return r;
}
