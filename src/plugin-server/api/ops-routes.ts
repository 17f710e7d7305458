import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import type { Endpoint } from './descriptions/index.js';
import type { AccountRegistry } from '../accounts.js';
import type { ObjectReads } from '../cache/store.js';
import type { LiveReader } from '../ops/live-read.js';
import { ownerHost, type TaskRunner } from '../ops/task-runner.js';
import { taskView } from '../tasks/model.js';
import { operationsFromBody } from './operation-input.js';

export interface OpsRouteDeps {
  accounts: AccountRegistry;
  runner: TaskRunner;
  store: ObjectReads;
  live?: LiveReader;
  /** Dynamic accounts the registry may not hold yet (defined, no agent connected). */
  dynamic?: { has(name: string): boolean };
}

type OpsRequest = { Params: { opName?: string }; Querystring: { clientRequestId?: string } };

/**
 * The envelope the route can check before parsing. The descriptions themselves are read by the parser
 * (descriptions/parse.ts), not by a body schema: Clouddriver reads them leniently (Orca's whole stage context
 * around them, `credentials` for `account`, numbers and booleans as strings), which a schema could only copy.
 */
const submitSchema = {
  querystring: {
    type: 'object',
    properties: { clientRequestId: { type: 'string', maxLength: 255 } },
  },
} as const;

/**
 * Clouddriver's operations surface: `POST /kubernetes/ops` and `/ops` (and their single-operation forms) validate
 * synchronously (400 with `errors`) and answer `{id, resourceUri}`; `GET /task/{id}` reports progress in
 * Clouddriver's shape. Also the cache endpoints Orca calls after a deploy, which have nothing to do because a task
 * completes only once the cache holds what it wrote. The rest of what Orca calls is in orca-routes.ts (task
 * resume/restart, cluster targets, artifacts) and job-routes.ts (runJob); the admin view of operations in flight is
 * in admin-routes.ts.
 */
export const opsRoutes: FastifyPluginAsync<OpsRouteDeps> = async (app, deps) => {
  const submit = (endpoint: Endpoint) => async (request: FastifyRequest<OpsRequest>) => {
    const requestId = request.query.clientRequestId || undefined;
    const operations = await operationsFromBody(request.body, endpoint, deps, request.headers, request.params.opName);
    const who = request.principal?.who ?? `network:${request.ip}`;
    const { task } = await deps.runner.submit(operations, requestId, who);
    return { id: task.id, resourceUri: `/task/${task.id}` };
  };

  app.post<OpsRequest>('/kubernetes/ops', { schema: submitSchema }, submit('kubernetes'));
  app.post<OpsRequest>('/kubernetes/ops/:opName', { schema: submitSchema }, submit('kubernetes'));
  app.post<OpsRequest>('/ops', { schema: submitSchema }, submit('ops'));
  app.post<OpsRequest>('/ops/:opName', { schema: submitSchema }, submit('ops'));

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
    // The host name of the replica that runs (or last ran) the task, its pod name in Kubernetes, as Clouddriver names
    // its own pod: Orca's forced retry (docs/clouddriver-compatibility.md, Tasks) looks that pod up.
    return { name: ownerHost(task.ownerId) };
  });

  // Current Clouddriver has no on-demand caching for Kubernetes either: 200, nothing pending (§5).
  app.post<{ Params: { type: string } }>('/cache/kubernetes/:type', async () => ({ cachedIdentifiersByType: {} }));
  app.get<{ Params: { type: string } }>('/cache/kubernetes/:type', async () => []);
};
