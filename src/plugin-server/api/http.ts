import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { httpStatusOf, isScaleAgentError, ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import type { AccountRegistry, RegisteredAccount } from '../accounts.js';
import type { CachedObject, ObjectReads } from '../cache/store.js';
import type { PluginServerMetrics } from '../metrics.js';
import type { PublishedAccount, ReplicaViews } from '../replica-views.js';
import type { FrontMode } from '../upstream/front.js';
import type { FiatPermissions } from '../auth/fiat.js';
import { installReadAccess, readableAccounts, type Allows } from '../auth/read-access.js';
import { credentialsDetail, credentialsSummary } from './credentials.js';
import { resolveKind, splitFullName } from './kinds.js';
import { manifestContainer } from './manifest.js';
import { eventsOf } from '../views/events.js';

export interface ApiDeps {
  store: ObjectReads;
  accounts: AccountRegistry;
  metrics: PluginServerMetrics;
  /** Agents of every replica, and what peers' agents reported of the accounts they hold. */
  views: ReplicaViews;
  ready: () => Promise<{ ready: boolean; reasons: string[] }>;
  log: Logger;
  /** Dynamic accounts (accounts/dynamic.ts): listed with the agents' accounts, shown in their own shape. */
  dynamic?: {
    has(name: string): boolean;
    views(): { name: string }[];
    view(name: string): object | undefined;
    /** Brings the definitions up to the store (a peer may have changed them since the last poll). */
    sync(): Promise<void>;
  };
  /** Live read through the account's agent for kinds the cache does not hold (ops/live-read.ts). */
  liveManifest?: (
    account: string,
    location: string,
    kindSpec: string,
    resolved: { kind: string; group: string | undefined },
    name: string,
  ) => Promise<CachedObject | undefined>;
  /** Front mode (spinnaker.upstream): merged routes are wrapped as they are registered, so before any is. */
  front?: FrontMode;
  /** spinnaker.fiat: reads of an account need READ for the request's user (auth/read-access.ts). */
  fiat?: FiatPermissions;
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
 * Lag and sync progress as the holder sees them: this replica's own for accounts its agents hold, the holder's
 * published view (replica-views.ts) for a peer's; null for an account no replica holds.
 */
function activityView(status: PublishedAccount) {
  const seen = status.activity;
  return { changeLagMs: seen.changeLagMs ?? null, lastChangeAt: seen.lastChangeAt ?? null, sync: seen.sync ?? null };
}

function accountView(a: RegisteredAccount, status: PublishedAccount) {
  return {
    name: a.record.name,
    state: a.state,
    agentId: a.record.agentId,
    zoneId: '',
    kubeHost: a.record.apiServerHost,
    certFingerprint: a.record.caFingerprint,
    kubeVersion: a.record.kubernetesVersion,
    errorMessage: status.reported?.error ?? '',
    forbiddenKinds: status.reported?.forbiddenKinds ?? [],
    lastUpdated: a.lastUpdated,
    orphanedAt: a.orphanedAt,
    registeredAt: a.record.registeredAt,
    // Which plugin-server replica the agent's stream ends on: this one (local) or a peer sharing the store.
    heldBy: a.sessionId ? 'local' : a.peer ? { replica: a.peer.replica, url: a.peer.url } : null,
    ...activityView(status),
  };
}

function intQuery(value: unknown, name: string, def: number, min: number, max: number): number {
  if (value === undefined || value === '') return def;
  const n = Number(value);
  if (!Number.isInteger(n) || n < min || n > max) {
    throw new ScaleAgentError('INVALID_INPUT', `query parameter ${name} must be an integer from ${min} to ${max}`, {
      details: [{ path: name, message: `must be an integer from ${min} to ${max}` }],
    });
  }
  return n;
}

/**
 * The REST face: Clouddriver-compatible reads (credentials, manifests), the Armory-style admin API, and the
 * operational endpoints. Every error is JSON with a stable SA_ERR_* code.
 */
export function buildApi(deps: ApiDeps): FastifyInstance {
  const app = Fastify({
    logger: false,
    routerOptions: { ignoreDuplicateSlashes: true, ignoreTrailingSlash: true, maxParamLength: 1024 },
    bodyLimit: API_BODY_LIMIT,
  });
  deps.front?.wrapRoutes(app);
  installReadAccess(app, {
    fiat: deps.fiat,
    accounts: () => [
      ...deps.accounts.list().map((a) => a.record.name),
      ...(deps.dynamic?.views() ?? []).map((v) => v.name),
    ],
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

  const liveNamespaces = async (account: string): Promise<string[]> =>
    (await deps.store.list({ account, group: '', kind: 'Namespace' })).map((o) => o.name);
  /** The cached Namespaces of every account at once (one index read, not one query per account). */
  const allNamespaces = async (): Promise<Map<string, string[]>> => {
    const out = new Map<string, string[]>();
    for (const k of await deps.store.searchKeys({ group: '', kind: 'Namespace' }, 'namespace', '')) {
      const list = out.get(k.account);
      if (list) list.push(k.name);
      else out.set(k.account, [k.name]);
    }
    return out;
  };

  const accountOr404 = (name: string, allows?: Allows): RegisteredAccount => {
    const a = allows && !allows(name) ? undefined : deps.accounts.get(name);
    if (!a) throw new ScaleAgentError('NOT_FOUND', `Account does not exist (name: ${name})`);
    return a;
  };

  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const r = await deps.ready();
    return reply.code(r.ready ? 200 : 503).send({ status: r.ready ? 'ready' : 'not ready', reasons: r.reasons });
  });
  app.get('/metrics', async (_request, reply) => {
    const text = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(text);
  });

  // Reads of an account the caller may not read answer as for an account that does not exist, so they neither show
  // it nor tell that it exists (auth/read-access.ts).
  app.get<{ Querystring: { expand?: string } }>('/credentials', async (request) => {
    const expand = request.query.expand === 'true';
    const allows = await readableAccounts(request);
    const namespaces = expand ? await allNamespaces() : undefined;
    const out = [];
    for (const a of deps.accounts.list()) {
      if (!allows(a.record.name)) continue;
      out.push(
        namespaces ? credentialsDetail(a.record, namespaces.get(a.record.name) ?? []) : credentialsSummary(a.record),
      );
    }
    return out;
  });
  app.get<{ Params: { account: string } }>('/credentials/:account', async (request) => {
    const a = accountOr404(request.params.account, await readableAccounts(request));
    return credentialsDetail(a.record, await liveNamespaces(a.record.name));
  });

  const getManifest = async (
    request: FastifyRequest,
    account: string,
    location: string,
    fullName: string,
    includeEvents: boolean,
  ) => {
    const notFound = () =>
      new ScaleAgentError(
        'NOT_FOUND',
        `Manifest (account: ${account}, location: ${location}, name: ${fullName}) not found`,
      );
    if (!(await readableAccounts(request))(account) || !deps.accounts.get(account)) throw notFound();
    const parts = splitFullName(fullName);
    if (!parts) throw notFound();
    const { kind, group } = resolveKind(parts[0]);
    const o =
      (await deps.store.get({ account, group, kind, namespace: location, name: parts[1] })) ??
      (await deps.liveManifest?.(account, location, parts[0], { kind, group }, parts[1]));
    if (!o) throw notFound();
    const container = manifestContainer(o);
    if (includeEvents) container.events = await eventsOf(deps.store, o);
    return container;
  };
  // Clouddriver's default is includeEvents=true (Gate sends none, so Deck shows events); Orca sends false.
  const withEvents = (q: { includeEvents?: string }) => q.includeEvents?.toLowerCase() !== 'false';
  app.get<{ Params: { account: string; location: string; name: string }; Querystring: { includeEvents?: string } }>(
    '/manifests/:account/:location/:name',
    async (request) => {
      const { account, location, name } = request.params;
      return getManifest(request, account, location === '_' ? '' : location, name, withEvents(request.query));
    },
  );
  app.get<{ Params: { account: string; name: string }; Querystring: { includeEvents?: string } }>(
    '/manifests/:account/:name',
    async (request) => getManifest(request, request.params.account, '', request.params.name, withEvents(request.query)),
  );

  app.get('/armory/agents', async () => deps.views.agents());
  app.get<{ Params: { agentId: string } }>('/armory/agents/:agentId', async (request) => {
    // The latest stream of the agent (agents() orders them by connection time).
    const s = deps.views
      .agents()
      .filter((x) => x.agentId === request.params.agentId)
      .at(-1);
    if (!s) throw new ScaleAgentError('NOT_FOUND', `Agent not connected (agentId: ${request.params.agentId})`);
    return s;
  });

  const activity = deps.metrics.activity;
  /**
   * The account's reported status and activity, from whichever replica's agent holds it; none while no agent does
   * (what the last holder reported is in no other replica's memory, so showing it here would differ by replica).
   */
  const statusOf = (a: RegisteredAccount | undefined): PublishedAccount => {
    if (a?.sessionId) return { reported: a.reported, activity: activity.view(a.record.name, a.sessionId) };
    if (a?.peer) return deps.views.account(a.peer.replica, a.record.name) ?? { activity: {} };
    return { activity: {} };
  };
  const dynamicActivity = (name: string) => activityView(statusOf(deps.accounts.get(name)));
  app.get<{ Querystring: { page?: string; limit?: string } }>('/armory/accounts', async (request) => {
    const page = intQuery(request.query.page, 'page', 1, 1, 1_000_000);
    const limit = intQuery(request.query.limit, 'limit', 100, 1, 1000);
    const dynamic = deps.dynamic;
    await dynamic?.sync();
    const all: { name: string }[] = [
      ...deps.accounts
        .list()
        .filter((a) => !dynamic?.has(a.record.name))
        .map((a) => accountView(a, statusOf(a))),
      ...(dynamic?.views() ?? []).map((v) => ({ ...v, ...dynamicActivity(v.name) })),
    ].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return {
      items: all.slice((page - 1) * limit, page * limit),
      page,
      limit,
      total: all.length,
    };
  });
  app.get<{ Params: { name: string } }>('/armory/accounts/:name', async (request) => {
    // The store's definition, not this replica's last poll of it (a peer may have changed it a moment ago).
    await deps.dynamic?.sync();
    const dynamicView = deps.dynamic?.view(request.params.name);
    if (dynamicView) return { ...dynamicView, ...dynamicActivity(request.params.name) };
    const a = accountOr404(request.params.name);
    return accountView(a, statusOf(a));
  });
  app.get<{ Params: { name: string } }>('/agents/kubernetes/accounts/:name', async (request) => {
    const a = accountOr404(request.params.name);
    const status = statusOf(a);
    return {
      ...accountView(a, status),
      type: 'kubernetes',
      source: 'static-agent-config',
      config: {
        namespaces: a.record.namespaces,
        omitNamespaces: a.record.omitNamespaces,
        kinds: a.record.kinds,
        omitKinds: a.record.omitKinds,
        permissions: a.record.permissions,
        onlySpinnakerManaged: a.record.onlySpinnakerManaged,
        cacheAllApplicationRelationships: a.record.cacheAllApplicationRelationships,
      },
      // Held through this replica or a peer: the same answer on every replica.
      agents: a.sessionId || a.peer ? [{ agentId: a.record.agentId, caching: true }] : [],
      status: a.state,
      lastAssignmentMsg: a.state === 'ACTIVE' ? `held by agent ${a.record.agentId}` : a.state,
      kinds: status.reported?.kinds.map((k) => ({ group: k.group, version: k.version, kind: k.kind })) ?? [],
    };
  });

  // Not Clouddriver: the cache's view of one account as keys and resourceVersions, for the consistency checker
  // (test/infra/cache-checker.ts) and for operators comparing it with `kubectl get`.
  app.get<{ Params: { account: string }; Querystring: { kind?: string; group?: string; namespace?: string } }>(
    '/admin/cache/:account',
    async (request) => {
      accountOr404(request.params.account);
      const objects = await deps.store.list({
        account: request.params.account,
        kind: request.query.kind,
        group: request.query.group,
        namespace: request.query.namespace,
      });
      return objects.map((o) => ({
        apiVersion: o.apiVersion,
        kind: o.kind,
        namespace: o.namespace,
        name: o.name,
        uid: o.uid,
        resourceVersion: o.resourceVersion,
      }));
    },
  );

  return app;
}
