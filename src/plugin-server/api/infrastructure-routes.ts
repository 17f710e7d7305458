import type { FastifyPluginAsync } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import { instanceModel } from '../views/instance.js';
import { loadAroundLoadBalancer, loadApplication, type Allows } from '../views/load.js';
import { loadBalancerModel, securityGroupModel, securityGroupSummary } from '../views/models.js';
import { toResource, type Obj, type Resource } from '../views/resource.js';
import { search } from '../views/search.js';
import { splitFullName } from '../views/kinds.js';
import { byName, viewContext, type Req, type ViewRouteDeps } from './view-routing.js';

/**
 * Clouddriver's infrastructure views (load balancers, instances and their console, security groups, search), from
 * the cache, with container logs read live (docs/clouddriver-compatibility.md).
 */
export const infrastructureRoutes: FastifyPluginAsync<ViewRouteDeps> = async (app, deps) => {
  const { store } = deps;
  const { allowsOf, providerOr404, objectAt } = viewContext(deps);

  app.get('/applications/:app/loadBalancers', async (request: Req<{ app: string }>) => {
    const rel = await loadApplication(store, request.params.app, await allowsOf(request));
    return rel.loadBalancers.map((lb) => loadBalancerModel(rel, lb)).sort((a, b) => byName(a as never, b as never));
  });

  app.get(
    '/kubernetes/loadBalancers/:account/:region/:name',
    async (request: Req<{ account: string; region: string; name: string }>) => {
      const { account, region, name } = request.params;
      // Clouddriver answers an empty list, not 404, for a load balancer it does not know.
      const lb = splitFullName(name)
        ? await objectAt(account, region, name, 'name', await allowsOf(request))
        : undefined;
      if (!lb || lb.category !== 'loadBalancers') return [];
      return [loadBalancerModel(await loadAroundLoadBalancer(store, lb), lb)];
    },
  );

  app.get('/instances/:account/:region/:id', async (request: Req<{ account: string; region: string; id: string }>) => {
    const { account, region, id } = request.params;
    const pod = await objectAt(account, region, id, 'id', await allowsOf(request));
    if (!pod || pod.o.kind !== 'Pod') {
      throw new ScaleAgentError('NOT_FOUND', `Instance not found (account: ${account}, region: ${region}, id: ${id})`);
    }
    return instanceModel(pod);
  });

  // Container logs, read live as Clouddriver reads them (kubectl logs): init containers first, then containers.
  app.get(
    '/instances/:account/:region/:id/console',
    async (request: Req<{ account: string; region: string; id: string }>) => {
      const { account, region, id } = request.params;
      const allows = await allowsOf(request);
      if (!allows(account) || !deps.logs) {
        throw new ScaleAgentError(
          'NOT_FOUND',
          `Instance not found (account: ${account}, region: ${region}, id: ${id})`,
        );
      }
      const pod = await objectAt(account, region, id, 'id', allows);
      if (!pod || pod.o.kind !== 'Pod') {
        return { output: [{ name: 'Error', output: 'Failed to retrieve pod data; pod may have been deleted.' }] };
      }
      const spec = (pod.manifest.spec ?? {}) as {
        initContainers?: { name?: unknown }[];
        containers?: { name?: unknown }[];
      };
      const names = [...(spec.initContainers ?? []), ...(spec.containers ?? [])]
        .map((c) => c.name)
        .filter((n): n is string => typeof n === 'string');
      const output = [];
      for (const name of names) {
        // A container whose log cannot be read (not started yet, agent gone) says why, and the others still show.
        const text = await deps.logs(account, region, pod.o.name, name).catch((e: Error) => `Error: ${e.message}`);
        output.push({ name, output: text });
      }
      return { output };
    },
  );

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
    for (const np of await networkPolicies(await allowsOf(request))) {
      const ns = ((out[np.o.account] ??= { kubernetes: {} }).kubernetes[np.o.namespace] ??= []);
      ns.push(securityGroupSummary(np));
    }
    for (const a of Object.values(out)) for (const list of Object.values(a.kubernetes)) list.sort(byName as never);
    return out;
  });

  app.get('/securityGroups/:account', async (request: Req<{ account: string }, { region?: string }>) => {
    const policies = await networkPolicies(await allowsOf(request), request.params.account);
    if (policies.length === 0) return {};
    const { region } = request.query;
    if (region !== undefined) return { kubernetes: byNamespace(policies)[region] ?? [] };
    return { kubernetes: byNamespace(policies) };
  });

  app.get(
    '/securityGroups/:account/:provider',
    async (request: Req<{ account: string; provider: string }, { region?: string }>) => {
      providerOr404(request.params.provider);
      const grouped = byNamespace(await networkPolicies(await allowsOf(request), request.params.account));
      return request.query.region !== undefined ? (grouped[request.query.region] ?? []) : grouped;
    },
  );

  app.get(
    '/securityGroups/:account/:provider/:name',
    async (request: Req<{ account: string; provider: string; name: string }>) => {
      providerOr404(request.params.provider);
      // Clouddriver matches the name part only, in every namespace.
      const name = splitFullName(request.params.name)?.[1] ?? request.params.name;
      const policies = await networkPolicies(await allowsOf(request), request.params.account);
      return byNamespace(policies.filter((np) => np.o.name === name));
    },
  );

  app.get(
    '/securityGroups/:account/:provider/:region/:name',
    async (request: Req<{ account: string; provider: string; region: string; name: string }>) => {
      providerOr404(request.params.provider);
      const { account, region, name } = request.params;
      const bare = splitFullName(name)?.[1] ?? name;
      const o = (await allowsOf(request))(account)
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
      const allows = await allowsOf(request);
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
};

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
