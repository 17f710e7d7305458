import type { KubeObject } from './types.js';

/** Clouddriver's KubernetesJobStatus, the body of `GET /applications/{app}/jobs/{account}/{ns}/job%20<name>`. */
export interface JobStatus {
  name: string;
  account: string;
  location: string;
  provider: 'kubernetes';
  createdTime: number;
  completedTime?: number;
  jobState: 'Running' | 'Succeeded' | 'Failed';
  completionDetails: { exitCode: string; signal: string; message: string; reason: string };
  message?: string;
  reason?: string;
  pods: { name: string; status: unknown }[];
  mostRecentPodName?: string;
  /** Set when the Job failed and a container of its pods ended with a non-zero exit code (or a signal). */
  exitCode?: number;
  signal?: number;
  /** What failed, in one paragraph: the Job's Failed condition and the failed container's termination. */
  failureDetails?: string;
  /** The failed container's log, when the caller could read it (plugin-server, through the agent). */
  logs?: string;
}

/** The container whose termination explains a failed Job, newest pod first. */
export interface FailedContainer {
  pod: string;
  container: string;
  exitCode: number;
  signal?: number;
  reason?: string;
  message?: string;
}

interface ContainerStatusShape {
  name?: string;
  state?: { terminated?: { exitCode?: number; signal?: number; reason?: string; message?: string } };
  lastState?: { terminated?: { exitCode?: number; signal?: number; reason?: string; message?: string } };
}

interface JobShape {
  spec?: { completions?: number };
  status?: {
    succeeded?: number;
    completionTime?: string;
    conditions?: { type?: string; status?: string; message?: string; reason?: string }[];
  };
}

/** Job state as Clouddriver computes it: no status → Running; enough successes → Succeeded; a Failed condition → Failed. */
export function jobStatusOf(job: KubeObject, account: string, pods: readonly KubeObject[] = []): JobStatus {
  const j = job as KubeObject & JobShape;
  const created = Date.parse(String(job.metadata.creationTimestamp ?? ''));
  const out: JobStatus = {
    name: job.metadata.name ?? '',
    account,
    location: job.metadata.namespace ?? '',
    provider: 'kubernetes',
    createdTime: Number.isNaN(created) ? 0 : created,
    jobState: 'Running',
    completionDetails: { exitCode: '', signal: '', message: '', reason: '' },
    pods: [...pods]
      .sort((a, b) =>
        String(a.metadata.creationTimestamp ?? '').localeCompare(String(b.metadata.creationTimestamp ?? '')),
      )
      .map((p) => ({ name: p.metadata.name ?? '', status: p.status ?? {} })),
  };
  const last = out.pods[out.pods.length - 1];
  if (last) out.mostRecentPodName = last.name;
  if (j.status) {
    const completions = j.spec?.completions ?? 1;
    const failed = j.status.conditions?.find((c) => c.type === 'Failed' && c.status === 'True');
    if ((j.status.succeeded ?? 0) >= completions) out.jobState = 'Succeeded';
    else if (failed) {
      out.jobState = 'Failed';
      if (failed.message) out.message = failed.message;
      if (failed.reason) out.reason = failed.reason;
      out.completionDetails = { ...out.completionDetails, message: failed.message ?? '', reason: failed.reason ?? '' };
    }
    const done = Date.parse(j.status.completionTime ?? '');
    if (!Number.isNaN(done)) out.completedTime = done;
  }
  if (out.jobState === 'Failed') addFailureDetails(out, failedContainerOf(pods));
  return out;
}

/**
 * The newest pod's container (init containers first: they run first) that terminated with a non-zero exit code or
 * a signal, in its current or, after a restart, its last state.
 */
export function failedContainerOf(pods: readonly KubeObject[]): FailedContainer | undefined {
  const newestFirst = [...pods].sort((a, b) =>
    String(b.metadata.creationTimestamp ?? '').localeCompare(String(a.metadata.creationTimestamp ?? '')),
  );
  for (const pod of newestFirst) {
    const status = (pod.status ?? {}) as {
      initContainerStatuses?: ContainerStatusShape[];
      containerStatuses?: ContainerStatusShape[];
    };
    for (const c of [...(status.initContainerStatuses ?? []), ...(status.containerStatuses ?? [])]) {
      const t = c.state?.terminated ?? c.lastState?.terminated;
      if (!t || !c.name || ((t.exitCode ?? 0) === 0 && !t.signal)) continue;
      const out: FailedContainer = { pod: pod.metadata.name ?? '', container: c.name, exitCode: t.exitCode ?? 0 };
      if (t.signal) out.signal = t.signal;
      if (t.reason) out.reason = t.reason;
      if (t.message) out.message = t.message;
      return out;
    }
  }
  return undefined;
}

function addFailureDetails(out: JobStatus, failed: FailedContainer | undefined): void {
  const lines: string[] = [];
  if (out.message || out.reason) lines.push(`Job failed: ${[out.reason, out.message].filter(Boolean).join(': ')}`);
  if (failed) {
    out.exitCode = failed.exitCode;
    out.completionDetails.exitCode = String(failed.exitCode);
    if (failed.signal !== undefined) {
      out.signal = failed.signal;
      out.completionDetails.signal = String(failed.signal);
    }
    lines.push(
      `Pod ${failed.pod}: container ${failed.container} exited with code ${failed.exitCode}` +
        (failed.signal !== undefined ? ` (signal ${failed.signal})` : '') +
        (failed.reason ? `, reason ${failed.reason}` : '') +
        (failed.message ? `: ${failed.message}` : ''),
    );
  }
  if (lines.length) out.failureDetails = lines.join('\n');
}
