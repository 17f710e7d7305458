/**
 * Randomized schedules and the replica fault rows on a replicated install of real processes: the rig, the seeded
 * planner, the ownership checker and the runner (bench/faults.ts --replicas).
 */
export { ClockSkew, libfaketimePath } from './faketime.js';
export { REPLICA_FAULT_ROWS, replicaFaultRow, type ReplicaFaultRow } from './fault-rows.js';
export { OwnershipChecker } from './ownership-checker.js';
export { OwnershipJudge, type Violation, type World } from './ownership-judge.js';
export { ReplicaRig, type ReplicaRigOptions } from './replica-rig.js';
export { runSchedule, type ScheduleResult } from './run-schedule.js';
export {
  describeStep,
  FAULT_KINDS,
  planSchedule,
  random,
  type FaultKind,
  type ScheduleShape,
  type Step,
} from './schedule.js';
