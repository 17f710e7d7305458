import type { FastifyPluginAsync } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import type { AccountRegistry, RegisteredAccount } from '../accounts.js';
import type { ScanRound } from '../accounts/account-scan.js';
import type { ObjectReads } from '../cache/store.js';
import type { PluginServerMetrics } from '../metrics.js';
import type { TaskRunner } from '../ops/task-runner.js';
import type { PublishedAccount, ReplicaViews } from '../replica-views.js';

export interface AdminRouteDeps {
  store: ObjectReads;
  accounts: AccountRegistry;
  metrics: PluginServerMetrics;
  /** Agents of every replica, and what peers' agents reported of the accounts they hold. */
  views: ReplicaViews;
  /** Dynamic accounts (accounts/dynamic.ts): listed with the agents' accounts, shown in their own shape. */
  dynamic?: {
    has(name: string): boolean;
    views(): { name: string }[];
    view(name: string): object | undefined;
    /** Brings the definitions up to the store (a peer may have changed them since the last poll). */
    sync(): Promise<void>;
  };
  runner: TaskRunner;
  /** dynamicAccounts.scan (accounts/account-scan.ts): whether it runs, and its last round. */
  accountScan?: { enabled: boolean; last(): ScanRound | undefined } | undefined;
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
 * The Armory-style admin reads (agents, accounts with their state and activity, operations in flight) and the
 * cache's diagnostics. Registered in the admin context (api/http.ts), whose hook wants a token on every route.
 */
export const adminRoutes: FastifyPluginAsync<AdminRouteDeps> = async (app, deps) => {
  const accountOr404 = (name: string): RegisteredAccount => {
    const a = deps.accounts.get(name);
    if (!a) throw new ScaleAgentError('NOT_FOUND', `Account does not exist (name: ${name})`);
    return a;
  };

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

  app.get('/admin/account-scan', async () => ({
    enabled: deps.accountScan?.enabled ?? false,
    // This replica's last round: every replica scans (account-scan.ts), so each shows its own.
    lastRound: deps.accountScan?.last() ?? null,
  }));
  app.get('/armory/agent/operations', async () => deps.runner.pending());
  app.get<{ Params: { id: string } }>('/armory/agent/operations/:id', async (request) => {
    const op = await deps.runner.operation(request.params.id);
    if (!op) throw new ScaleAgentError('NOT_FOUND', `Operation not found (id: ${request.params.id})`);
    return op;
  });
};
