import type { FastifyPluginAsync } from 'fastify';
import type { PluginServerMetrics } from '../metrics.js';

export interface HealthRouteDeps {
  ready: () => Promise<{ ready: boolean; reasons: string[] }>;
  metrics: PluginServerMetrics;
}

/** Probes and the Prometheus scrape: open to anyone (probes and scrapers carry no credentials), never proxied. */
export const healthRoutes: FastifyPluginAsync<HealthRouteDeps> = async (app, deps) => {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const r = await deps.ready();
    return reply.code(r.ready ? 200 : 503).send({ status: r.ready ? 'ready' : 'not ready', reasons: r.reasons });
  });
  app.get('/metrics', async (_request, reply) => {
    const text = await deps.metrics.registry.metrics();
    return reply.type(deps.metrics.registry.contentType).send(text);
  });
};
