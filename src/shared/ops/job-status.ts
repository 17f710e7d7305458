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
  return out;
}
