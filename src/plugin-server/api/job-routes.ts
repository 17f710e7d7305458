import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import { readableAccounts } from '../auth/read-access.js';
import { accountFilter, requireWritable } from '../auth/spinnaker-accounts.js';
import { failedContainerOf, jobStatusOf, type KubeObject, type NormalizedOperation } from '../../shared/ops/index.js';
import { parsePropertyFile } from '../../shared/ops/property-file.js';
import type { CachedObject } from '../cache/store.js';
import type { OrcaRouteDeps } from './orca-routes.js';
import type { LiveReader } from '../ops/live-read.js';

export type JobRouteDeps = OrcaRouteDeps;

type JobParams = { app: string; account: string; location: string; id: string };

function parse(o: CachedObject): KubeObject {
  return JSON.parse(o.json) as KubeObject;
}

/**
 * The runJob routes Orca's Run Job stage calls (docs/clouddriver-compatibility.md, Jobs): the Job's status while it
 * waits (WaitOnJobCompletion), the properties its pod printed, and cancelling it.
 */
export const jobRoutes: FastifyPluginAsync<JobRouteDeps> = async (app, deps) => {
  const live = (): LiveReader => {
    if (!deps.live) throw new ScaleAgentError('UNAVAILABLE', 'live reads through the agent are not available');
    return deps.live;
  };

  /**
   * The Job from the cache, live when the cache lacks it; `id` is "job name" or the bare name. An account the
   * caller may not read reads as missing, like /manifests.
   */
  const findJob = async (
    p: JobParams,
    request: FastifyRequest,
  ): Promise<{ job: KubeObject; location: string; name: string }> => {
    const location = p.location === '_' ? '' : p.location;
    const name = p.id.startsWith('job ') ? p.id.slice(4) : p.id;
    const cached = !(await readableAccounts(request))(p.account)
      ? undefined
      : ((await deps.store.get({ account: p.account, group: 'batch', kind: 'Job', namespace: location, name })) ??
        (await deps.live?.get(p.account, location, 'job', { kind: 'Job', group: 'batch' }, name)));
    if (!cached) {
      throw new ScaleAgentError(
        'NOT_FOUND',
        `Job (account: ${p.account}, location: ${location}, name: ${p.id}) not found`,
      );
    }
    return { job: parse(cached), location, name };
  };

  /** The Job's pods (owned by its uid), from the cache. */
  const podsOf = async (account: string, location: string, job: KubeObject): Promise<KubeObject[]> => {
    const uid = job.metadata.uid;
    return (await deps.store.list({ account, group: '', kind: 'Pod', namespace: location }))
      .map(parse)
      .filter(
        (p) =>
          Array.isArray(p.metadata.ownerReferences) &&
          p.metadata.ownerReferences.some((o: { uid?: string }) => o.uid === uid),
      );
  };

  // WaitOnJobCompletion polls this until jobState is Succeeded or Failed; a Job with no pod yet is Running.
  app.get<{ Params: JobParams }>('/applications/:app/jobs/:account/:location/:id', async (request) => {
    const { job, location } = await findJob(request.params, request);
    const pods = await podsOf(request.params.account, location, job);
    const status = jobStatusOf(job, request.params.account, pods);
    const failed = status.jobState === 'Failed' ? failedContainerOf(pods) : undefined;
    if (failed && deps.live) {
      // The failed container's log helps whoever reads the stage; without it the status is still complete.
      status.logs = await deps.live
        .logs(request.params.account, location, failed.pod, failed.container)
        .catch(() => undefined);
      if (status.logs === undefined) delete status.logs;
    }
    return status;
  });

  // The Run Job stage's "property file": for Kubernetes, the name of the container whose log carries the
  // SPINNAKER_PROPERTY_ lines, read from the Job's newest pod.
  app.get<{ Params: JobParams & { fileName: string } }>(
    '/applications/:app/jobs/:account/:location/:id/:fileName',
    async (request) => {
      const { job, location, name } = await findJob(request.params, request);
      const pods = await podsOf(request.params.account, location, job);
      const newest = jobStatusOf(job, request.params.account, pods).mostRecentPodName;
      if (!newest) {
        throw new ScaleAgentError(
          'NOT_FOUND',
          `Job ${name} in ${location} has no pod yet, so there is no log to read properties from; ` +
            'ask again once its pod has run',
        );
      }
      return parsePropertyFile(await live().logs(request.params.account, location, newest, request.params.fileName));
    },
  );

  app.get<{ Params: { app: string; account: string; namespace: string; pod: string; fileName: string } }>(
    '/applications/:app/kubernetes/pods/:account/:namespace/:pod/:fileName',
    async (request) => {
      const { account, namespace, pod, fileName } = request.params;
      if (!deps.accounts.get(account) || !(await readableAccounts(request))(account))
        throw new ScaleAgentError('NOT_FOUND', `Account does not exist (name: ${account})`);
      return parsePropertyFile(await live().logs(account, namespace, pod, fileName));
    },
  );

  // Cancelling a Run Job deletes the Job, its pods with it (Background propagation, as `kubectl delete job` does).
  app.delete<{ Params: JobParams }>('/applications/:app/jobs/:account/:location/:id', async (request) => {
    // A write: refused (403) for an account outside the caller's accounts before anything says whether it exists.
    requireWritable(accountFilter(request.headers), [request.params.account]);
    const { location, name } = await findJob(request.params, request);
    const target = { location, kind: 'job', name };
    const op: NormalizedOperation = {
      type: 'deleteManifest',
      account: request.params.account,
      payload: {
        location,
        target,
        kinds: [],
        labelSelectors: [],
        propagationPolicy: 'Background',
        waitTimeoutMs: 0,
        warnings: [],
      },
    };
    const who = request.principal?.who ?? `network:${request.ip}`;
    const { task } = await deps.runner.submit([op], undefined, who);
    return { id: task.id, resourceUri: `/task/${task.id}` };
  });
};
