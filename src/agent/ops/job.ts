import { runJobResult, type RunJobResultObject } from '../../shared/ops/results.js';
import { jobStatusOf, type JobStatus } from '../../shared/ops/job-status.js';
import type { KubeObject, RunJobPayload } from '../../shared/ops/types.js';
import { deployManifests } from './deploy.js';
import type { OpContext } from './context.js';

/**
 * runJob: deploy the Job with `moniker.app = application`, the namespace forced when given, and the recreate
 * strategy forced so every run creates a new Job (generateName is honoured). The result is deploy-shaped plus
 * `deployedNamesByLocation` (Orca copies it into `deploy.jobs`) and the Job's status as the API server shows it.
 */
export async function runJob(ctx: OpContext, p: RunJobPayload): Promise<RunJobResultObject & { jobStatus: JobStatus }> {
  const manifest: KubeObject = structuredClone(p.manifest);
  if (p.namespace) manifest.metadata.namespace = p.namespace;
  const deployed = await deployManifests(
    ctx,
    {
      manifests: [manifest],
      moniker: { app: p.application },
      enableTraffic: false,
      services: [],
      enableArtifactBinding: true,
      requiredArtifacts: p.requiredArtifacts,
      optionalArtifacts: p.optionalArtifacts,
      skipSpecTemplateLabels: false,
      ...(p.applyMode ? { applyMode: p.applyMode } : {}),
    },
    true,
  );
  const job = deployed.manifests?.[0] as KubeObject;
  return { ...runJobResult(deployed), jobStatus: jobStatusOf(job, ctx.account) };
}
