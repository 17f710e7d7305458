import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import { readableAccounts } from '../auth/read-access.js';
import { accountFilter, requireWritable } from '../auth/spinnaker-accounts.js';
import type { ObjectReads } from '../cache/store.js';
import type { LiveReader } from '../ops/live-read.js';
import type { TaskRunner } from '../ops/task-runner.js';
import {
  clusterMembers,
  coordinatesOf,
  parseCriteria,
  pickByCriteria,
  type ManifestCoordinates,
} from './cluster-manifests.js';
import { resolveKind } from '../views/kinds.js';
import { operationsFromBody, type OperationInputDeps } from './operation-input.js';

export interface OrcaRouteDeps extends OperationInputDeps {
  runner: TaskRunner;
  store: ObjectReads;
  /** Live reads through the account's agent, for what the cache does not hold (ops/live-read.ts). */
  live?: LiveReader;
}

type ClusterParams = { account: string; location: string; kind: string; app: string; cluster: string };

const taskId = (id: string) => ({ id, resourceUri: `/task/${id}` });
const taskNotFound = (id: string) => new ScaleAgentError('NOT_FOUND', `Task not found (id: ${id})`);
const who = (request: FastifyRequest) => request.principal?.who ?? `network:${request.ip}`;

/**
 * The Clouddriver routes Orca's Kubernetes stages call besides operations and task polling
 * (docs/clouddriver-compatibility.md): the manifests of a moniker cluster and the dynamic target among them,
 * and the task calls of Orca's retry paths (resume, restart, retryability).
 */
export const orcaRoutes: FastifyPluginAsync<OrcaRouteDeps> = async (app, deps) => {
  // An account the caller may not read reads as missing, like /manifests.
  const clusterObjects = async (request: FastifyRequest<{ Params: ClusterParams }>) => {
    const p = request.params;
    if (!deps.accounts.get(p.account) || !(await readableAccounts(request))(p.account)) {
      throw new ScaleAgentError('NOT_FOUND', `Account does not exist (name: ${p.account})`);
    }
    const { kind, group } = resolveKind(p.kind);
    const namespace = p.location === '_' ? '' : p.location;
    // Live when the account does not cache this kind there (filtered by kinds/namespaces), as manifests are.
    return (
      (await deps.live?.list(p.account, namespace, p.kind, { kind, group })) ??
      deps.store.list({ account: p.account, kind, group, namespace })
    );
  };

  // Clouddriver lists in the API server's order, which is by name.
  app.get<{ Params: ClusterParams }>(
    '/manifests/:account/:location/:kind/cluster/:app/:cluster',
    async (request): Promise<ManifestCoordinates[]> => {
      const { app: application, cluster } = request.params;
      return clusterMembers(await clusterObjects(request), cluster, application)
        .map(coordinatesOf)
        .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    },
  );

  app.get<{ Params: ClusterParams & { criteria: string } }>(
    '/manifests/:account/:location/:kind/cluster/:app/:cluster/dynamic/:criteria',
    async (request): Promise<ManifestCoordinates> => {
      const { account, location, kind, app: application, cluster } = request.params;
      const criteria = parseCriteria(request.params.criteria);
      // Clouddriver picks a dynamic target by cluster alone (KubernetesManifestProvider.getClusterAndSortAscending).
      const picked = pickByCriteria(clusterMembers(await clusterObjects(request), cluster), criteria);
      if (!picked) {
        throw new ScaleAgentError(
          'NOT_FOUND',
          `No manifests matching (account: ${account}, location: ${location}, kind: ${kind}, app ${application}, ` +
            `cluster: ${cluster}, criteria: ${criteria}) found`,
        );
      }
      return coordinatesOf(picked);
    },
  );

  /** A task the caller may act on: it exists (404) and all its accounts are the caller's (403). */
  const writableTask = async (request: FastifyRequest, id: string) => {
    const task = await deps.runner.get(id);
    if (!task) throw taskNotFound(id);
    requireWritable(
      accountFilter(request.headers),
      task.operations.map((o) => o.account),
    );
    return task;
  };

  // Orca's resumeTask is `POST /task/{id}:resume`: one path segment, so the action is split off the id here.
  app.post<{ Params: { ref: string } }>('/task/:ref', async (request) => {
    const ref = request.params.ref;
    if (!ref.endsWith(':resume')) {
      throw new ScaleAgentError('NOT_FOUND', `no route for POST /task/${ref} (tasks take POST /task/{id}:resume)`);
    }
    const id = ref.slice(0, -':resume'.length);
    await writableTask(request, id);
    const task = await deps.runner.resume(id, who(request));
    if (!task) throw taskNotFound(id);
    return taskId(task.id);
  });

  // Orca's updateTaskRetryability sends {"retry": true}; Clouddriver then fails the task as retryable (task.fail).
  app.patch<{ Params: { id: string } }>('/kubernetes/task/:id', async (request) => {
    const body = request.body as { retry?: unknown } | null;
    if (typeof body !== 'object' || body === null || typeof body.retry !== 'boolean') {
      throw new ScaleAgentError('INVALID_INPUT', 'PATCH /kubernetes/task/{id} takes {"retry": true|false}', {
        details: [{ path: 'retry', message: 'must be a boolean' }],
      });
    }
    await writableTask(request, request.params.id);
    const task = await deps.runner.failAsRequested(request.params.id, body.retry);
    if (!task) throw taskNotFound(request.params.id);
    return taskId(task.id);
  });

  // scale-agent's own (Clouddriver has no cancel of a task, and Orca calls none for a manifest stage): docs/api.md.
  app.post<{ Params: { id: string } }>('/scale-agent/tasks/:id/cancel', async (request) => {
    await writableTask(request, request.params.id);
    const r = await deps.runner.cancel(request.params.id, who(request));
    if (!r) throw taskNotFound(request.params.id);
    return { ...taskId(r.task.id), cancelling: r.cancelling };
  });

  app.post<{ Params: { id: string } }>('/kubernetes/task/:id/restart', async (request) => {
    const operations = await operationsFromBody(request.body, 'kubernetes', deps, request.headers);
    await writableTask(request, request.params.id);
    const task = await deps.runner.restart(request.params.id, operations, who(request));
    if (!task) throw taskNotFound(request.params.id);
    return taskId(task.id);
  });
};
