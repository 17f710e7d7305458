import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import {
  formatIssues,
  jobStatusOf,
  parseOperations,
  validateAccounts,
  type Endpoint,
  type KubeObject,
} from '../../shared/ops/index.js';
import type { AccountRegistry } from '../accounts.js';
import { accountFilter, requireWritable } from '../auth/spinnaker-accounts.js';
import type { CachedObject, CacheStore } from '../cache/store.js';
import type { LiveReader } from '../ops/live-read.js';
import type { TaskRunner } from '../ops/task-runner.js';
import { taskView } from '../tasks/model.js';

export interface OpsRouteDeps {
  accounts: AccountRegistry;
  runner: TaskRunner;
  store: CacheStore;
  live?: LiveReader;
  /** Dynamic accounts the registry may not hold yet (defined, no agent connected). */
  dynamic?: { has(name: string): boolean };
}

type OpsRequest = { Params: { opName?: string }; Querystring: { clientRequestId?: string } };

const MAX_REQUEST_ID = 255;

/**
 * Clouddriver's operations surface: `POST /kubernetes/ops` and `/ops` (and their single-operation forms) validate
 * synchronously (400 with `errors`) and answer `{id, resourceUri}`; `GET /task/{id}` reports progress in
 * Clouddriver's shape. Also the cache endpoints Orca calls after a deploy, which have nothing to do because a task
 * completes only once the cache holds what it wrote, and the admin view of operations in flight.
 */
export function registerOpsRoutes(app: FastifyInstance, deps: OpsRouteDeps): void {
  const submit = (endpoint: Endpoint) => async (request: FastifyRequest<OpsRequest>) => {
    const requestId = request.query.clientRequestId || undefined;
    if (requestId && requestId.length > MAX_REQUEST_ID) {
      throw new ScaleAgentError('INVALID_INPUT', `clientRequestId is longer than ${MAX_REQUEST_ID} characters`);
    }
    const parsed = parseOperations(request.body, {
      endpoint,
      ...(request.params.opName ? { operationName: request.params.opName } : {}),
    });
    // Accounts outside the caller's X-SPINNAKER-ACCOUNTS are refused (403) before anything says whether they exist.
    if (parsed.ok)
      requireWritable(
        accountFilter(request.headers),
        parsed.operations.map((op) => op.account),
      );
    const issues = parsed.ok
      ? validateAccounts(parsed.operations, {
          knownAccounts: (name) => deps.accounts.get(name) !== undefined || (deps.dynamic?.has(name) ?? false),
          accountScope: (name) => {
            const r = deps.accounts.get(name)?.record;
            return r ? { namespaces: r.namespaces, omitNamespaces: r.omitNamespaces } : undefined;
          },
        })
      : parsed.errors;
    if (!parsed.ok || issues.length > 0) {
      throw new ScaleAgentError('INVALID_INPUT', 'Validation Failed', {
        details: formatIssues(issues).map((message) => ({ message })),
      });
    }
    const who = request.principal?.who ?? `network:${request.ip}`;
    const { task } = await deps.runner.submit(parsed.operations, requestId, who, request.headers.authorization);
    return { id: task.id, resourceUri: `/task/${task.id}` };
  };

  app.post<OpsRequest>('/kubernetes/ops', submit('kubernetes'));
  app.post<OpsRequest>('/kubernetes/ops/:opName', submit('kubernetes'));
  app.post<OpsRequest>('/ops', submit('ops'));
  app.post<OpsRequest>('/ops/:opName', submit('ops'));

  app.get<{ Params: { id: string } }>('/task/:id', async (request) => {
    const task = await deps.runner.get(request.params.id);
    if (!task) throw new ScaleAgentError('NOT_FOUND', `Task not found (id: ${request.params.id})`);
    return taskView(task);
  });
  app.get<{ Querystring: { limit?: string } }>('/task', async (request) => {
    const limit = Math.min(Math.max(Number(request.query.limit ?? 100) || 100, 1), 1000);
    return (await deps.runner.list(limit)).map(taskView);
  });
  app.get<{ Params: { id: string } }>('/kubernetes/task/:id/owner', async (request) => {
    const task = await deps.runner.get(request.params.id);
    if (!task) throw new ScaleAgentError('NOT_FOUND', `Task not found (id: ${request.params.id})`);
    return { name: task.ownerId.slice(task.ownerId.indexOf('@') + 1) };
  });

  // Current Clouddriver has no on-demand caching for Kubernetes either: 200, nothing pending (§5).
  app.post<{ Params: { type: string } }>('/cache/kubernetes/:type', async () => ({ cachedIdentifiersByType: {} }));
  app.get<{ Params: { type: string } }>('/cache/kubernetes/:type', async () => []);

  // runJob's status as Orca polls it (WaitOnJobCompletion): from the cache, live when the cache lacks the Job.
  app.get<{ Params: { app: string; account: string; location: string; id: string } }>(
    '/applications/:app/jobs/:account/:location/:id',
    async (request) => {
      const { account, id } = request.params;
      const location = request.params.location === '_' ? '' : request.params.location;
      const name = id.startsWith('job ') ? id.slice(4) : id;
      // An account outside the caller's X-SPINNAKER-ACCOUNTS reads as missing, like /manifests.
      const job = !accountFilter(request.headers).allows(account)
        ? undefined
        : ((await deps.store.get({ account, group: 'batch', kind: 'Job', namespace: location, name })) ??
          (await deps.live?.get(account, location, 'job', { kind: 'Job', group: 'batch' }, name)));
      if (!job)
        throw new ScaleAgentError(
          'NOT_FOUND',
          `Job (account: ${account}, location: ${location}, name: ${id}) not found`,
        );
      const obj = parse(job);
      const uid = obj.metadata.uid;
      const pods = (await deps.store.list({ account, group: '', kind: 'Pod', namespace: location }))
        .map(parse)
        .filter(
          (p) =>
            Array.isArray(p.metadata.ownerReferences) &&
            p.metadata.ownerReferences.some((o: { uid?: string }) => o.uid === uid),
        );
      return jobStatusOf(obj, account, pods);
    },
  );

  app.get('/armory/agent/operations', async () => deps.runner.pending());
  app.get<{ Params: { id: string } }>('/armory/agent/operations/:id', async (request) => {
    const op = await deps.runner.operation(request.params.id);
    if (!op) throw new ScaleAgentError('NOT_FOUND', `Operation not found (id: ${request.params.id})`);
    return op;
  });
}

function parse(o: CachedObject): KubeObject {
  return JSON.parse(o.json) as KubeObject;
}
