import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import type { AccountRegistry } from '../accounts.js';
import { accountFilter } from '../auth/spinnaker-accounts.js';
import type { CacheStore } from '../cache/store.js';
import { loadAroundLoadBalancer, loadAroundServerGroup, loadApplication, type Allows } from '../views/load.js';
import {
  clusterModel,
  clusterServerGroups,
  clusterViewModel,
  expandedServerGroup,
  loadBalancerModel,
  rawResourceModel,
  securityGroupModel,
  securityGroupSummary,
  serverGroupManagerModel,
  serverGroupModel,
  serverGroupViewModel,
} from '../views/models.js';
import { instanceModel } from '../views/instance.js';
import { toResource, type Obj, type Resource } from '../views/resource.js';
import { search } from '../views/search.js';
import { resolveKind, splitFullName } from './kinds.js';

export interface ViewRouteDeps {
  store: CacheStore;
  accounts: AccountRegistry;
}

type Req<P = Record<string, string>, Q = Record<string, string | undefined>> = FastifyRequest<{
  Params: P;
  Querystring: Q;
}>;

function bool(value: string | undefined, def: boolean): boolean {
  if (value === undefined || value === '') return def;
  return value.toLowerCase() === 'true';
}

function byName(a: { name: string }, b: { name: string }): number {
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
}

/** "replicaSet backend-v014" → its kind and name; 400 naming the parameter when it is not "kind name". */
function fullName(value: string, what: string): { kind: string; group: string | undefined; name: string } {
  const parts = splitFullName(value);
  if (!parts) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `${what} must be "<kind> <name>", e.g. "replicaSet web-v001" (got: ${value})`,
      {
        details: [{ path: what, message: 'must be "<kind> <name>"' }],
      },
    );
  }
  return { ...resolveKind(parts[0]), name: parts[1] };
}

/**
 * Clouddriver's read views for Deck, Gate, Fiat and Orca (applications, clusters, server groups and their managers,
 * load balancers, instances, security groups, search, raw resources), computed from the cache's application and
 * owner indexes. Every route honours X-SPINNAKER-ACCOUNTS: an account outside it is never shown. What each route
 * answers for unknown names follows Clouddriver (404 for single objects, empty lists for collections).
 */
export function registerViewRoutes(app: FastifyInstance, deps: ViewRouteDeps): void {
  const { store } = deps;
  const allowsOf = (request: FastifyRequest): Allows => {
    const filter = accountFilter(request.headers);
    return (account) => filter.allows(account) && deps.accounts.get(account) !== undefined;
  };

  /** Applications with their clusters per account, from the index alone. */
  const clusterNames = async (allows: Allows, only?: string) => {
    const apps = new Map<string, Map<string, string[]>>();
    for (const c of await store.applicationClusters(only)) {
      if (!allows(c.account)) continue;
      let accounts = apps.get(c.app);
      if (!accounts) apps.set(c.app, (accounts = new Map()));
      const list = accounts.get(c.account);
      if (list) list.push(c.cluster);
      else accounts.set(c.account, [c.cluster]);
    }
    return apps;
  };

  app.get('/applications', async (request) => {
    const apps = await clusterNames(allowsOf(request));
    return [...apps]
      .map(([name, accounts]) => ({ name, attributes: { name }, clusterNames: Object.fromEntries(accounts) }))
      .sort(byName);
  });

  app.get('/applications/:app', async (request: Req<{ app: string }>) => {
    const name = request.params.app;
    const accounts = (await clusterNames(allowsOf(request), name)).get(name);
    if (!accounts) throw new ScaleAgentError('NOT_FOUND', `Application does not exist (name: ${name})`);
    return {
      name,
      attributes: { name, cloudProviders: 'kubernetes' },
      clusters: Object.fromEntries(
        [...accounts].map(([account, clusters]) => [
          account,
          clusters.map((c) => ({ name: c, loadBalancers: [], serverGroups: [], provider: 'kubernetes' })),
        ]),
      ),
    };
  });

  app.get('/applications/:app/clusters', async (request: Req<{ app: string }>) => {
    const accounts = (await clusterNames(allowsOf(request), request.params.app)).get(request.params.app);
    return accounts ? Object.fromEntries(accounts) : {};
  });

  app.get('/applications/:app/clusters/:account', async (request: Req<{ app: string; account: string }>) => {
    const { app: name, account } = request.params;
    const allows = allowsOf(request);
    const clusters = allows(account) ? (await clusterNames(allows, name)).get(name)?.get(account) : undefined;
    if (!clusters)
      throw new ScaleAgentError('NOT_FOUND', `No clusters found (application: ${name}, account: ${account})`);
    const rel = await loadApplication(store, name, (a) => a === account);
    return clusters.map((c) => clusterViewModel(rel, name, account, c));
  });

  const clusterOr404 = async (request: Req<{ app: string; account: string; cluster: string }>) => {
    const { app: name, account, cluster } = request.params;
    const allows = allowsOf(request);
    const known = allows(account) && (await clusterNames(allows, name)).get(name)?.get(account)?.includes(cluster);
    if (!known) {
      throw new ScaleAgentError(
        'NOT_FOUND',
        `Cluster not found (application: ${name}, account: ${account}, cluster: ${cluster})`,
      );
    }
    return { name, account, cluster, rel: await loadApplication(store, name, (a) => a === account) };
  };

  app.get(
    '/applications/:app/clusters/:account/:cluster',
    async (request: Req<{ app: string; account: string; cluster: string }, { expand?: string }>) => {
      const c = await clusterOr404(request);
      return [clusterModel(c.rel, c.name, c.account, c.cluster, bool(request.query.expand, true))];
    },
  );

  const providerOr404 = (provider: string) => {
    if (provider !== 'kubernetes') throw new ScaleAgentError('NOT_FOUND', `Unknown cloud provider: ${provider}`);
  };

  app.get(
    '/applications/:app/clusters/:account/:cluster/:provider',
    async (request: Req<{ app: string; account: string; cluster: string; provider: string }, { expand?: string }>) => {
      providerOr404(request.params.provider);
      const c = await clusterOr404(request);
      return clusterModel(c.rel, c.name, c.account, c.cluster, bool(request.query.expand, true));
    },
  );

  app.get(
    '/applications/:app/clusters/:account/:cluster/:provider/serverGroups',
    async (
      request: Req<
        { app: string; account: string; cluster: string; provider: string },
        { region?: string; expand?: string }
      >,
    ) => {
      providerOr404(request.params.provider);
      const c = await clusterOr404(request);
      if (!bool(request.query.expand, true)) return [];
      return clusterServerGroups(c.rel, c.account, c.cluster)
        .filter((sg) => request.query.region === undefined || sg.o.namespace === request.query.region)
        .map((sg) => serverGroupModel(c.rel, sg));
    },
  );

  app.get(
    '/applications/:app/clusters/:account/:cluster/:provider/serverGroups/:serverGroup',
    async (
      request: Req<
        { app: string; account: string; cluster: string; provider: string; serverGroup: string },
        { region?: string }
      >,
    ) => {
      providerOr404(request.params.provider);
      const c = await clusterOr404(request);
      const want = fullName(request.params.serverGroup, 'serverGroup');
      const found = clusterServerGroups(c.rel, c.account, c.cluster).filter(
        (sg) =>
          sg.o.name === want.name &&
          sg.o.kind === want.kind &&
          (request.query.region === undefined || sg.o.namespace === request.query.region),
      );
      if (found.length === 0) {
        throw new ScaleAgentError('NOT_FOUND', `Server group not found (name: ${request.params.serverGroup})`);
      }
      const models = found.map((sg) => serverGroupModel(c.rel, sg));
      return request.query.region === undefined ? models : models[0];
    },
  );

  // Orca's generic server group stages name a target rather than a server group (TargetServerGroup).
  app.get(
    '/applications/:app/clusters/:account/:cluster/:provider/:scope/serverGroups/target/:target',
    async (
      request: Req<
        { app: string; account: string; cluster: string; provider: string; scope: string; target: string },
        { onlyEnabled?: string; validateOldest?: string }
      >,
    ) => {
      providerOr404(request.params.provider);
      const c = await clusterOr404(request);
      const candidates = clusterServerGroups(c.rel, c.account, c.cluster)
        .filter((sg) => sg.o.namespace === request.params.scope)
        .filter((sg) => !bool(request.query.onlyEnabled, false) || !c.rel.disabled(sg));
      const chosen = pickTarget(request.params.target, candidates, c.rel, bool(request.query.validateOldest, true));
      return serverGroupModel(c.rel, chosen);
    },
  );

  const appServerGroups = async (name: string, allows: Allows, expand: boolean, clusters?: string) => {
    const rel = await loadApplication(store, name, allows);
    let wanted: Set<string> | undefined;
    if (clusters !== undefined) {
      wanted = new Set(clusters.split(',').filter((c) => c.includes(':')));
    }
    return rel.serverGroups
      .filter((sg) => sg.o.index?.cluster)
      .filter((sg) => !wanted || wanted.has(`${sg.o.account}:${sg.o.index!.cluster}`))
      .map((sg) =>
        expand ? expandedServerGroup(rel, sg, sg.o.index!.cluster) : serverGroupViewModel(rel, sg, sg.o.index!.cluster),
      );
  };

  app.get(
    '/applications/:app/serverGroups',
    async (request: Req<{ app: string }, { expand?: string; clusters?: string; cloudProvider?: string }>) => {
      const { expand, clusters, cloudProvider } = request.query;
      if (cloudProvider && cloudProvider.toLowerCase() !== 'kubernetes') return [];
      return appServerGroups(request.params.app, allowsOf(request), bool(expand, false), clusters);
    },
  );

  app.get('/serverGroups', async (request: Req<Record<string, never>, { applications?: string; ids?: string }>) => {
    const { applications, ids } = request.query;
    if ((applications === undefined) === (ids === undefined)) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        'exactly one of the query parameters applications and ids is required',
      );
    }
    const allows = allowsOf(request);
    if (applications !== undefined) {
      const out: Obj[] = [];
      for (const name of applications.split(',').filter(Boolean))
        out.push(...(await appServerGroups(name, allows, false)));
      return out;
    }
    const out: Obj[] = [];
    for (const id of ids!.split(',')) {
      const [account, region, ...rest] = id.split(':');
      if (!account || region === undefined || rest.length === 0 || !allows(account)) continue;
      const found = await serverGroupAt(account, region, rest.join(':')).catch(() => undefined);
      if (found) out.push(serverGroupViewModel(found.rel, found.sg, found.sg.moniker.cluster ?? ''));
    }
    return out;
  });

  const objectAt = async (account: string, namespace: string, value: string, what: string, allows: Allows) => {
    const want = fullName(value, what);
    const o = allows(account)
      ? await store.get({ account, group: want.group, kind: want.kind, namespace, name: want.name })
      : undefined;
    return o?.json ? toResource(o) : undefined;
  };

  const serverGroupAt = async (account: string, region: string, name: string, allows: Allows = () => true) => {
    const sg = await objectAt(account, region, name, 'serverGroup', allows);
    if (!sg) {
      throw new ScaleAgentError(
        'NOT_FOUND',
        `Server group not found (account: ${account}, region: ${region}, name: ${name})`,
      );
    }
    return { sg, rel: await loadAroundServerGroup(store, sg) };
  };

  const serverGroupRoute = async (request: Req<{ account: string; region: string; name: string }>) => {
    const { account, region, name } = request.params;
    const { sg, rel } = await serverGroupAt(account, region, name, allowsOf(request));
    return serverGroupModel(rel, sg);
  };
  app.get('/serverGroups/:account/:region/:name', serverGroupRoute);
  app.get('/applications/:app/serverGroups/:account/:region/:name', serverGroupRoute);

  app.get('/applications/:app/serverGroupManagers', async (request: Req<{ app: string }>) => {
    const rel = await loadApplication(store, request.params.app, allowsOf(request));
    return rel.managers.map((m) => serverGroupManagerModel(rel, m));
  });

  app.get('/applications/:app/loadBalancers', async (request: Req<{ app: string }>) => {
    const rel = await loadApplication(store, request.params.app, allowsOf(request));
    return rel.loadBalancers.map((lb) => loadBalancerModel(rel, lb)).sort((a, b) => byName(a as never, b as never));
  });

  app.get(
    '/kubernetes/loadBalancers/:account/:region/:name',
    async (request: Req<{ account: string; region: string; name: string }>) => {
      const { account, region, name } = request.params;
      // Clouddriver answers an empty list, not 404, for a load balancer it does not know.
      const lb = splitFullName(name) ? await objectAt(account, region, name, 'name', allowsOf(request)) : undefined;
      if (!lb || lb.category !== 'loadBalancers') return [];
      return [loadBalancerModel(await loadAroundLoadBalancer(store, lb), lb)];
    },
  );

  app.get('/instances/:account/:region/:id', async (request: Req<{ account: string; region: string; id: string }>) => {
    const { account, region, id } = request.params;
    const pod = await objectAt(account, region, id, 'id', allowsOf(request));
    if (!pod || pod.o.kind !== 'Pod') {
      throw new ScaleAgentError('NOT_FOUND', `Instance not found (account: ${account}, region: ${region}, id: ${id})`);
    }
    return instanceModel(pod);
  });

  const networkPolicies = async (allows: Allows, account?: string): Promise<Resource[]> => {
    const accounts = account !== undefined ? [account] : deps.accounts.list().map((a) => a.record.name);
    const out: Resource[] = [];
    for (const a of accounts.filter(allows)) {
      for (const o of await store.list({ account: a, group: 'networking.k8s.io', kind: 'NetworkPolicy' })) {
        if (o.json) out.push(toResource(o));
      }
    }
    return out;
  };
  const byNamespace = (policies: Resource[]) => {
    const out: Record<string, Obj[]> = {};
    for (const np of [...policies].sort((a, b) => byName({ name: a.fullName }, { name: b.fullName }))) {
      (out[np.o.namespace] ??= []).push(securityGroupSummary(np));
    }
    return out;
  };

  app.get('/securityGroups', async (request) => {
    const out: Record<string, { kubernetes: Record<string, Obj[]> }> = {};
    for (const np of await networkPolicies(allowsOf(request))) {
      const ns = ((out[np.o.account] ??= { kubernetes: {} }).kubernetes[np.o.namespace] ??= []);
      ns.push(securityGroupSummary(np));
    }
    for (const a of Object.values(out)) for (const list of Object.values(a.kubernetes)) list.sort(byName as never);
    return out;
  });

  app.get('/securityGroups/:account', async (request: Req<{ account: string }, { region?: string }>) => {
    const policies = await networkPolicies(allowsOf(request), request.params.account);
    if (policies.length === 0) return {};
    const { region } = request.query;
    if (region !== undefined) return { kubernetes: byNamespace(policies)[region] ?? [] };
    return { kubernetes: byNamespace(policies) };
  });

  app.get(
    '/securityGroups/:account/:provider',
    async (request: Req<{ account: string; provider: string }, { region?: string }>) => {
      providerOr404(request.params.provider);
      const grouped = byNamespace(await networkPolicies(allowsOf(request), request.params.account));
      return request.query.region !== undefined ? (grouped[request.query.region] ?? []) : grouped;
    },
  );

  app.get(
    '/securityGroups/:account/:provider/:name',
    async (request: Req<{ account: string; provider: string; name: string }>) => {
      providerOr404(request.params.provider);
      // Clouddriver matches the name part only, in every namespace.
      const name = splitFullName(request.params.name)?.[1] ?? request.params.name;
      const policies = await networkPolicies(allowsOf(request), request.params.account);
      return byNamespace(policies.filter((np) => np.o.name === name));
    },
  );

  app.get(
    '/securityGroups/:account/:provider/:region/:name',
    async (request: Req<{ account: string; provider: string; region: string; name: string }>) => {
      providerOr404(request.params.provider);
      const { account, region, name } = request.params;
      const bare = splitFullName(name)?.[1] ?? name;
      const o = allowsOf(request)(account)
        ? await store.get({ account, group: 'networking.k8s.io', kind: 'NetworkPolicy', namespace: region, name: bare })
        : undefined;
      if (!o?.json) throw new ScaleAgentError('NOT_FOUND', `Security group '${name}' does not exist`);
      return securityGroupModel(toResource(o));
    },
  );

  app.get(
    '/search',
    async (
      request: Req<
        Record<string, never>,
        { q?: string; type?: string; platform?: string; pageSize?: string; page?: string }
      >,
    ) => {
      const { q = '', type, platform, pageSize, page } = request.query;
      if (!type) {
        throw new ScaleAgentError(
          'INVALID_INPUT',
          'query parameter type is required (e.g. type=serverGroups or type=configMap)',
          {
            details: [{ path: 'type', message: 'required' }],
          },
        );
      }
      const size = positive(pageSize, 'pageSize', 10_000);
      const number = positive(page, 'page', 1);
      const allows = allowsOf(request);
      const results =
        platform && platform !== 'kubernetes'
          ? []
          : await search(store, {
              query: q,
              types: type.split(',').filter(Boolean),
              accounts: deps.accounts
                .list()
                .map((a) => a.record.name)
                .filter(allows),
            });
      const pageResults = results.slice(size * (number - 1), size * number);
      return [
        {
          totalMatches: pageResults.length,
          pageNumber: number,
          pageSize: size,
          platform: 'kubernetes',
          query: q,
          results: pageResults,
        },
      ];
    },
  );

  app.get('/applications/:app/rawResources', async (request: Req<{ app: string }>) => {
    const allows = allowsOf(request);
    return (await store.listApplication(request.params.app))
      .filter((o) => allows(o.account) && o.json)
      .map((o) => rawResourceModel(toResource(o)));
  });
}

function positive(value: string | undefined, name: string, def: number): number {
  if (value === undefined || value === '') return def;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new ScaleAgentError('INVALID_INPUT', `query parameter ${name} must be a positive integer (got: ${value})`, {
      details: [{ path: name, message: 'must be a positive integer' }],
    });
  }
  return n;
}

/**
 * TargetServerGroup as Clouddriver resolves it: current/newest, previous/ancestor, oldest, largest, fail, each also
 * with an `_asg` or `_asg_dynamic` suffix; ordered by creation time.
 */
function pickTarget(
  target: string,
  candidates: Resource[],
  rel: { podsOf(sg: Resource): Resource[] },
  validateOldest: boolean,
): Resource {
  const base = target.toLowerCase().replace(/(_asg_dynamic|_asg)$/, '');
  const dated = candidates
    .filter((sg) => metadataOf(sg).creationTimestamp !== undefined)
    .sort((a, b) => created(a) - created(b));
  const none = () => new ScaleAgentError('NOT_FOUND', `No server groups found for target ${target}`);
  switch (base) {
    case 'current':
    case 'newest':
      if (!dated.length) throw none();
      return dated[dated.length - 1]!;
    case 'previous':
    case 'ancestor':
      if (dated.length < 2) throw none();
      return dated[dated.length - 2]!;
    case 'oldest':
      if (!dated.length || (validateOldest && dated.length < 2)) throw none();
      return dated[0]!;
    case 'largest': {
      if (!dated.length) throw none();
      return [...dated].sort((a, b) => rel.podsOf(b).length - rel.podsOf(a).length || created(b) - created(a))[0]!;
    }
    case 'fail':
      if (dated.length !== 1) throw none();
      return dated[0]!;
    default:
      throw new ScaleAgentError('NOT_FOUND', `Target not found: ${target}`);
  }
}

function metadataOf(r: Resource): { creationTimestamp?: unknown } {
  return (r.manifest.metadata ?? {}) as { creationTimestamp?: unknown };
}

function created(r: Resource): number {
  const t = metadataOf(r).creationTimestamp;
  return typeof t === 'string' ? Date.parse(t) || 0 : 0;
}
