import Fastify, { type FastifyInstance, type FastifyPluginAsync, type FastifyReply } from 'fastify';
import { httpStatusOf, isScaleAgentError, ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import type { AccountRegistry } from '../accounts.js';
import type { DynamicAccounts } from '../accounts/dynamic.js';
import type { ArtifactCatalogue } from '../artifacts/catalogue.js';
import type { AuditLog } from '../audit.js';
import { isAdminPath, restAuth, type RestAuth } from '../auth/admin-auth.js';
import type { PeerSecret } from '../auth/peer-secret.js';
import type { FiatPermissions } from '../auth/fiat.js';
import { installReadAccess } from '../auth/read-access.js';
import type { ObjectReads } from '../cache/store.js';
import type { PluginServerConfig } from '../config.js';
import type { PluginServerMetrics } from '../metrics.js';
import type { CacheBarrier } from '../ops/barrier.js';
import type { OperationDispatcher } from '../ops/dispatcher.js';
import type { LiveReader } from '../ops/live-read.js';
import type { TaskRunner } from '../ops/task-runner.js';
import type { ReplicaViews } from '../replica-views.js';
import type { FrontMode } from '../upstream/front.js';
import { accountManagementRoutes, type ForwardRequest } from './account-management.js';
import { adminRoutes, type AdminRouteDeps } from './admin-routes.js';
import { artifactRoutes } from './artifact-routes.js';
import { credentialRoutes } from './credential-routes.js';
import { dynamicAccountRoutes } from './dynamic-routes.js';
import { healthRoutes } from './health-routes.js';
import { jobRoutes } from './job-routes.js';
import { manifestRoutes } from './manifest-routes.js';
import { opsRoutes } from './ops-routes.js';
import { orcaRoutes } from './orca-routes.js';
import { peerRoutes } from './peer-routes.js';
import { viewRoutes } from './views-routes.js';

/** What the route groups are given: the server's parts, built once in server.ts. */
export interface ApiDeps {
  log: Logger;
  /** http.auth: tokens and trusted networks (auth/admin-auth.ts). */
  http: PluginServerConfig['http'];
  audit: AuditLog;
  store: ObjectReads;
  accounts: AccountRegistry;
  metrics: PluginServerMetrics;
  /** Agents of every replica, and what peers' agents reported of the accounts they hold. */
  views: ReplicaViews;
  ready: () => Promise<{ ready: boolean; reasons: string[] }>;
  dynamic: DynamicAccounts;
  runner: TaskRunner;
  /** Live reads through the account's agent, for what the cache does not hold (ops/live-read.ts). */
  live: LiveReader;
  dispatcher: OperationDispatcher;
  barrier: CacheBarrier;
  /** http.peerAuth: the secret replicas present to each other on /internal/* (auth/peer-secret.ts). */
  peer?: PeerSecret | undefined;
  artifacts: ArtifactCatalogue;
  /** accounts.management.pattern: which Clouddriver account definitions become dynamic accounts. */
  managementPattern?: string | undefined;
  /** Account management requests this server does not handle (default in front mode: the upstream Clouddriver). */
  forwardAccountManagement?: ForwardRequest | undefined;
  /** Front mode: why an agent account may not take a name, because the upstream Clouddriver has it. */
  upstreamClash?: ((name: string) => string | undefined) | undefined;
  /** Front mode (spinnaker.upstream): merged routes are wrapped as they are registered, so before any is. */
  front?: FrontMode | undefined;
  /** spinnaker.fiat: reads of an account need READ for the request's user (auth/read-access.ts). */
  fiat?: FiatPermissions | undefined;
  /** dynamicAccounts.scan: its last round, on the admin API. */
  accountScan?: AdminRouteDeps['accountScan'];
}

const REASON: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  409: 'Conflict',
  413: 'Payload Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

/** The largest request body the API parses (operations carry whole manifests). */
export const API_BODY_LIMIT = 1024 * 1024;

/** Clouddriver's (kork) error body plus our stable `code`. */
function sendError(reply: FastifyReply, e: unknown): FastifyReply {
  const status = httpStatusOf(e);
  const code = isScaleAgentError(e) ? e.code : 'SA_ERR_INTERNAL';
  const message = isScaleAgentError(e) ? e.message : 'internal error';
  return reply.code(status).send({
    timestamp: new Date().toISOString(),
    status,
    error: REASON[status] ?? 'Error',
    code,
    message,
    ...(isScaleAgentError(e) && e.details.length ? { errors: e.details.map((d) => d.message) } : {}),
  });
}

/**
 * A route registered in the wrong context would be guarded by that context's authentication: refused at startup.
 */
function onlyRoutes(app: FastifyInstance, belongs: (url: string) => boolean, context: string): void {
  app.addHook('onRoute', (route) => {
    if (!belongs(route.url)) throw new Error(`route ${route.url} does not belong in ${context}`);
  });
}

/**
 * The REST face, one encapsulated context per audience, each with the authentication hook its routes need and the
 * route groups registered in it as plugins with their dependencies: the probes (open), the Clouddriver-compatible
 * surface (a token or a trusted network; in front mode, what is not about agent accounts goes to the upstream), the
 * Armory-style admin API (a token, always) and the peer route (ops/peer-forward.ts). Every error is JSON with a
 * stable SA_ERR_* code.
 */
export function buildApi(deps: ApiDeps): FastifyInstance {
  const app = Fastify({
    logger: false,
    routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true, maxParamLength: 1024 },
    bodyLimit: API_BODY_LIMIT,
  });
  const front = deps.front;
  front?.wrapRoutes(app);
  installReadAccess(app, {
    fiat: deps.fiat,
    accounts: () => [...deps.accounts.list().map((a) => a.record.name), ...deps.dynamic.views().map((v) => v.name)],
  });

  app.setErrorHandler((error, _request, reply) => {
    const e = error as Error & { statusCode?: number };
    if (isScaleAgentError(e)) return sendError(reply, e);
    if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500) {
      return sendError(reply, new ScaleAgentError(e.statusCode === 404 ? 'NOT_FOUND' : 'INVALID_INPUT', e.message));
    }
    deps.log.error({ err: e }, 'request failed');
    return sendError(reply, e);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new ScaleAgentError('NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`)),
  );

  const auth = restAuth(deps.http, deps.audit, { proxiesUnmatched: front !== undefined, peer: deps.peer });
  app.addHook('onRequest', auth.unmatched);
  app.addHook('onResponse', auth.audit);
  front?.routeUnmatched(app);

  void app.register(healthRoutes, { ready: deps.ready, metrics: deps.metrics });
  void app.register(clouddriverSurface(deps, auth));
  void app.register(async (admin) => {
    admin.addHook('onRequest', auth.surface('admin'));
    onlyRoutes(admin, isAdminPath, 'the admin API');
    const { store, accounts, metrics, views, dynamic, runner, accountScan } = deps;
    await admin.register(adminRoutes, { store, accounts, metrics, views, dynamic, runner, accountScan });
    await admin.register(dynamicAccountRoutes, { dynamic: deps.dynamic, upstreamClash: deps.upstreamClash });
  });
  void app.register(async (peers) => {
    // Replicas only, by the peer secret: never a token or a trusted network (a pod sharing the network is no replica).
    peers.addHook('onRequest', auth.surface('peer'));
    onlyRoutes(peers, (url) => url.startsWith('/internal/'), 'the peer API');
    await peers.register(peerRoutes, {
      dispatcher: deps.dispatcher,
      barrier: deps.barrier,
      operation: (id) => deps.runner.operation(id),
      cancelTask: async (id, requestedBy) => {
        const r = await deps.runner.cancel(id, requestedBy, true);
        return r && { cancelling: r.cancelling, accounts: r.task.operations.map((o) => o.account) };
      },
    });
  });
  return app;
}

/** Everything Spinnaker's services call, as Clouddriver answers it. */
function clouddriverSurface(deps: ApiDeps, auth: RestAuth): FastifyPluginAsync {
  return async (clouddriver) => {
    clouddriver.addHook('onRequest', auth.surface('clouddriver'));
    // After authentication: hooks of a context run in the order they were added.
    deps.front?.installRouting(clouddriver);
    onlyRoutes(clouddriver, (url) => !isAdminPath(url) && !url.startsWith('/internal/'), 'the Clouddriver surface');
    const front = deps.front;
    const forward: ForwardRequest | undefined = front ? (request, reply) => front.forward(request, reply) : undefined;
    const { store, accounts, live } = deps;
    await clouddriver.register(credentialRoutes, { store, accounts });
    await clouddriver.register(manifestRoutes, {
      store,
      accounts,
      liveManifest: (account, location, kindSpec, resolved, name) =>
        live.get(account, location, kindSpec, resolved, name),
    });
    await clouddriver.register(accountManagementRoutes, {
      dynamic: deps.dynamic,
      pattern: deps.managementPattern,
      // In front mode, definitions this server does not take go to the upstream Clouddriver, as sent.
      forward: deps.forwardAccountManagement ?? forward,
    });
    await clouddriver.register(artifactRoutes, { catalogue: deps.artifacts, forward });
    const operations = { accounts, runner: deps.runner, store, live, dynamic: deps.dynamic };
    await clouddriver.register(opsRoutes, operations);
    await clouddriver.register(orcaRoutes, operations);
    await clouddriver.register(jobRoutes, operations);
    await clouddriver.register(viewRoutes, {
      store,
      accounts,
      logs: (account, location, pod, container) => live.logs(account, location, pod, container),
    });
  };
}
