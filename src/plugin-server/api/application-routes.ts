import type { FastifyPluginAsync } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import { loadAroundServerGroup, loadApplication, type Allows } from '../views/load.js';
import {
  clusterModel,
  clusterServerGroups,
  clusterViewModel,
  expandedServerGroup,
  rawResourceModel,
  serverGroupManagerModel,
  serverGroupModel,
  serverGroupViewModel,
} from '../views/models.js';
import { toResource, type Obj, type Resource } from '../views/resource.js';
import { bool, byName, fullName, viewContext, type Req, type ViewRouteDeps } from './view-routing.js';
import { applicationClusters, clusterOf, listApplication } from '../views/app-index.js';

/**
 * Clouddriver's application views (ApplicationsController, ClusterController, ServerGroupController, server group
 * managers, raw resources), from the cache's application and owner indexes (docs/clouddriver-compatibility.md).
 */
export const applicationRoutes: FastifyPluginAsync<ViewRouteDeps> = async (app, deps) => {
  const { store } = deps;
  const { allowsOf, providerOr404, objectAt } = viewContext(deps);

  const clusterNames = async (allows: Allows, only?: string) => {
    const apps = new Map<string, Map<string, string[]>>();
    for (const c of await applicationClusters(store, only)) {
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
    const apps = await clusterNames(await allowsOf(request));
    return [...apps]
      .map(([name, accounts]) => ({ name, attributes: { name }, clusterNames: Object.fromEntries(accounts) }))
      .sort(byName);
  });

  app.get('/applications/:app', async (request: Req<{ app: string }>) => {
    const name = request.params.app;
    const accounts = (await clusterNames(await allowsOf(request), name)).get(name);
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
    const accounts = (await clusterNames(await allowsOf(request), request.params.app)).get(request.params.app);
    return accounts ? Object.fromEntries(accounts) : {};
  });

  app.get('/applications/:app/clusters/:account', async (request: Req<{ app: string; account: string }>) => {
    const { app: name, account } = request.params;
    const allows = await allowsOf(request);
    const clusters = allows(account) ? (await clusterNames(allows, name)).get(name)?.get(account) : undefined;
    if (!clusters)
      throw new ScaleAgentError('NOT_FOUND', `No clusters found (application: ${name}, account: ${account})`);
    const rel = await loadApplication(store, name, (a) => a === account);
    return clusters.map((c) => clusterViewModel(rel, name, account, c));
  });

  const clusterOr404 = async (request: Req<{ app: string; account: string; cluster: string }>) => {
    const { app: name, account, cluster } = request.params;
    const allows = await allowsOf(request);
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
      .filter((sg) => clusterOf(sg.o))
      .filter((sg) => !wanted || wanted.has(`${sg.o.account}:${clusterOf(sg.o)}`))
      .map((sg) =>
        expand ? expandedServerGroup(rel, sg, clusterOf(sg.o)) : serverGroupViewModel(rel, sg, clusterOf(sg.o)),
      );
  };

  app.get(
    '/applications/:app/serverGroups',
    async (request: Req<{ app: string }, { expand?: string; clusters?: string; cloudProvider?: string }>) => {
      const { expand, clusters, cloudProvider } = request.query;
      if (cloudProvider && cloudProvider.toLowerCase() !== 'kubernetes') return [];
      return appServerGroups(request.params.app, await allowsOf(request), bool(expand, false), clusters);
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
    const allows = await allowsOf(request);
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
    const { sg, rel } = await serverGroupAt(account, region, name, await allowsOf(request));
    return serverGroupModel(rel, sg);
  };
  app.get('/serverGroups/:account/:region/:name', serverGroupRoute);
  app.get('/applications/:app/serverGroups/:account/:region/:name', serverGroupRoute);

  app.get('/applications/:app/serverGroupManagers', async (request: Req<{ app: string }>) => {
    const rel = await loadApplication(store, request.params.app, await allowsOf(request));
    return rel.managers.map((m) => serverGroupManagerModel(rel, m));
  });

  app.get('/applications/:app/rawResources', async (request: Req<{ app: string }>) => {
    const allows = await allowsOf(request);
    return (await listApplication(store, request.params.app))
      .filter((o) => allows(o.account) && o.json)
      .map((o) => rawResourceModel(toResource(o)));
  });
};

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
