import type { FastifyPluginAsync } from 'fastify';
import { applicationRoutes } from './application-routes.js';
import { infrastructureRoutes } from './infrastructure-routes.js';
import type { ViewRouteDeps } from './view-routing.js';

export type { ViewRouteDeps } from './view-routing.js';

/**
 * Clouddriver's read views for Deck, Gate, Fiat and Orca (applications, clusters, server groups and their managers,
 * load balancers, instances, security groups, search, raw resources), computed from the cache's application and
 * owner indexes. Every route shows only the accounts the caller may read (auth/read-access.ts). What each route
 * answers for unknown names follows Clouddriver (404 for single objects, empty lists for collections).
 */
export const viewRoutes: FastifyPluginAsync<ViewRouteDeps> = async (app, deps) => {
  await app.register(applicationRoutes, deps);
  await app.register(infrastructureRoutes, deps);
};
