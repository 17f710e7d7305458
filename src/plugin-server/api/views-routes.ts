import type { FastifyInstance } from 'fastify';
import { registerApplicationRoutes } from './application-routes.js';
import { registerInfrastructureRoutes } from './infrastructure-routes.js';
import type { ViewRouteDeps } from './view-routing.js';

export type { ViewRouteDeps } from './view-routing.js';

/**
 * Clouddriver's read views for Deck, Gate, Fiat and Orca (applications, clusters, server groups and their managers,
 * load balancers, instances, security groups, search, raw resources), computed from the cache's application and
 * owner indexes. Every route shows only the accounts the caller may read (auth/read-access.ts). What each route
 * answers for unknown names follows Clouddriver (404 for single objects, empty lists for collections).
 */
export function registerViewRoutes(app: FastifyInstance, deps: ViewRouteDeps): void {
  registerApplicationRoutes(app, deps);
  registerInfrastructureRoutes(app, deps);
}
