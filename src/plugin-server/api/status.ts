/**
 * Clouddriver's manifest status rules per kind (docs/clouddriver-compatibility.md, Status rules): four conditions, each
 * `{state, message?}`, message left out when absent (Clouddriver serialises NON_NULL).
 */
export interface Condition {
  state: boolean;
  message?: string;
}

export interface ManifestStatus {
  stable: Condition;
  paused: Condition;
  available: Condition;
  failed: Condition;
}

type Obj = Record<string, unknown>;

const OLD_GENERATION = 'Waiting for status generation to match updated object generation';

function defaults(): ManifestStatus {
  return { stable: { state: true }, paused: { state: false }, available: { state: true }, failed: { state: false } };
}

function noneReported(): ManifestStatus {
  const s = defaults();
  s.stable = { state: false, message: 'No status reported yet' };
  s.available = { state: false, message: 'No availability reported' };
  return s;
}

function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function conditions(status: Obj): Obj[] {
  const c = status.conditions;
  return Array.isArray(c) ? c.filter((x): x is Obj => obj(x) !== undefined) : [];
}

function unstable(s: ManifestStatus, message: string): void {
  s.stable = { state: false, message };
}

function withMessage(state: boolean, message: unknown): Condition {
  const m = str(message);
  return m === undefined ? { state } : { state, message: m };
}

function generationMatches(manifest: Obj, status: Obj): boolean {
  const metadata = obj(manifest.metadata) ?? {};
  return status.observedGeneration !== undefined && num(status.observedGeneration) === num(metadata.generation);
}

function deployment(m: Obj): ManifestStatus {
  const status = obj(m.status);
  if (!status) return noneReported();
  const s = defaults();
  if (!generationMatches(m, status)) {
    unstable(s, OLD_GENERATION);
    return s;
  }
  const conds = conditions(status);
  const paused = conds.find((c) => str(c.reason)?.toLowerCase() === 'deploymentpaused');
  if (paused) s.paused = withMessage(true, paused.message);
  const unavailable = conds.find((c) => c.type === 'Available' && c.status === 'False');
  if (unavailable) {
    s.stable = withMessage(false, unavailable.message);
    s.available = withMessage(false, unavailable.message);
  }
  if (conds.some((c) => c.type === 'Progressing' && c.reason === 'ProgressDeadlineExceeded')) {
    s.failed = { state: true, message: 'Deployment exceeded its progress deadline' };
  }
  const desired = num(obj(m.spec)?.replicas);
  const updated = num(status.updatedReplicas);
  if (updated < desired) unstable(s, 'Waiting for all replicas to be updated');
  else if (num(status.replicas) > updated) unstable(s, 'Waiting for old replicas to finish termination');
  else if (num(status.availableReplicas) < desired) unstable(s, 'Waiting for all replicas to be available');
  else if (num(status.readyReplicas) < desired) unstable(s, 'Waiting for all replicas to be ready');
  return s;
}

function replicaSet(m: Obj): ManifestStatus {
  const status = obj(m.status);
  if (!status) return noneReported();
  const s = defaults();
  const desired = num(obj(m.spec)?.replicas);
  const checks: [string, string][] = [
    ['fullyLabeledReplicas', 'Waiting for all replicas to be fully-labeled'],
    ['readyReplicas', 'Waiting for all replicas to be ready'],
    ['availableReplicas', 'Waiting for all replicas to be available'],
  ];
  for (const [field, message] of checks) {
    if (num(status[field]) < desired) {
      s.stable = { state: false, message };
      s.available = { state: false, message };
      return s;
    }
  }
  if (!generationMatches(m, status)) unstable(s, 'Waiting for replicaset spec update to be observed');
  return s;
}

function statefulSet(m: Obj): ManifestStatus {
  const spec = obj(m.spec) ?? {};
  const strategy = obj(spec.updateStrategy) ?? {};
  if (strategy.type === 'OnDelete') return defaults();
  const status = obj(m.status);
  if (!status) return noneReported();
  const s = defaults();
  if (!generationMatches(m, status)) {
    unstable(s, OLD_GENERATION);
    return s;
  }
  const desired = num(spec.replicas);
  if (num(status.replicas) < desired) {
    unstable(s, 'Waiting for at least the desired replica count to be met');
    return s;
  }
  if (num(status.readyReplicas) < desired) {
    unstable(s, 'Waiting for all updated replicas to be ready');
    return s;
  }
  const rolling = obj(strategy.rollingUpdate);
  if (strategy.type === 'RollingUpdate' && status.updatedReplicas !== undefined && rolling) {
    if (rolling.partition !== undefined && num(status.updatedReplicas) < desired - num(rolling.partition)) {
      unstable(s, 'Waiting for partitioned roll out to finish');
      return s;
    }
    s.stable = { state: true, message: 'Partitioned roll out complete' };
    return s;
  }
  if (num(status.currentReplicas) < desired) {
    unstable(s, 'Waiting for all updated replicas to be scheduled');
    return s;
  }
  if (status.currentRevision !== status.updateRevision) {
    unstable(s, 'Waiting for the updated revision to match the current revision');
  }
  return s;
}

function daemonSet(m: Obj): ManifestStatus {
  const status = obj(m.status);
  if (!status) return noneReported();
  const s = defaults();
  if (!generationMatches(m, status)) {
    unstable(s, OLD_GENERATION);
    return s;
  }
  if (obj(obj(m.spec)?.updateStrategy)?.type !== 'RollingUpdate') return s;
  const desired = num(status.desiredNumberScheduled);
  const checks: [string, string][] = [
    ['currentNumberScheduled', 'Waiting for all replicas to be scheduled'],
    ['updatedNumberScheduled', 'Waiting for all updated replicas to be scheduled'],
    ['numberAvailable', 'Waiting for all replicas to be available'],
    ['numberReady', 'Waiting for all replicas to be ready'],
  ];
  for (const [field, message] of checks) {
    if (num(status[field]) < desired) {
      unstable(s, message);
      return s;
    }
  }
  return s;
}

function job(m: Obj): ManifestStatus {
  const status = obj(m.status);
  if (!status) return noneReported();
  const s = defaults();
  const completions = obj(m.spec)?.completions === undefined ? 1 : num(obj(m.spec)?.completions);
  if (num(status.succeeded) < completions) {
    const failed = conditions(status).find((c) => c.type === 'Failed' && c.status === 'True');
    if (failed) s.failed = withMessage(true, failed.message);
    else unstable(s, 'Waiting for jobs to finish');
  }
  return s;
}

function pod(m: Obj): ManifestStatus {
  const status = obj(m.status);
  if (!status) return noneReported();
  const s = defaults();
  const phase = str(status.phase);
  if (phase === 'Running' || phase === 'Succeeded') return s;
  const message =
    phase === 'Pending' ? 'Pod is pending' : phase === 'Failed' ? 'Pod has failed' : 'Pod phase is unknown';
  s.stable = { state: false, message };
  s.available = { state: false, message };
  return s;
}

function hpa(m: Obj): ManifestStatus {
  const status = obj(m.status);
  if (!status) return noneReported();
  const s = defaults();
  const desired = num(status.desiredReplicas);
  const current = num(status.currentReplicas);
  if (desired > current) unstable(s, `Waiting for HPA to complete a scale up, current: ${current} desired: ${desired}`);
  else if (desired < current) {
    unstable(s, `Waiting for HPA to complete a scale down, current: ${current} desired: ${desired}`);
  }
  return s;
}

function cronJob(m: Obj): ManifestStatus {
  return obj(m.status) ? defaults() : noneReported();
}

/** The status rules by `group/kind` (the core group is ''). */
const RULES = new Map<string, (manifest: Obj) => ManifestStatus>([
  ['apps/Deployment', deployment],
  ['apps/ReplicaSet', replicaSet],
  ['apps/StatefulSet', statefulSet],
  ['apps/DaemonSet', daemonSet],
  ['batch/Job', job],
  ['batch/CronJob', cronJob],
  ['/Pod', pod],
  ['autoscaling/HorizontalPodAutoscaler', hpa],
]);

/** Status of a manifest by its kind and group; kinds without rules are always stable. */
export function manifestStatus(group: string, kind: string, manifest: Obj): ManifestStatus {
  const rule = RULES.get(`${group}/${kind}`);
  return rule ? rule(manifest) : defaults();
}
