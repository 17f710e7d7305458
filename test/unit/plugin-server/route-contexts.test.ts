/**
 * The REST face's contexts (api/http.ts) each refuse, at startup, a route whose path belongs in another context: a
 * route group that registered `/armory/...` among the Clouddriver routes would be guarded by the Clouddriver
 * surface's rules (a trusted network, no token) instead of the admin API's. To make that mistake on purpose, this
 * file wraps one real route group per context so that it also registers one stray route; the server is otherwise
 * the real one, started as server.ts starts it.
 */
import type { FastifyPluginAsync, FastifyPluginOptions } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
import { PluginServer } from '../../../src/plugin-server/server.js';

type Context = 'admin' | 'peer' | 'clouddriver';

const stray = vi.hoisted(() => {
  const route: { context?: 'admin' | 'peer' | 'clouddriver'; url?: string } = {};
  /** The route group as it is, plus the stray route when this file's test asks for one in its context. */
  const withStray =
    <T extends FastifyPluginOptions>(
      context: 'admin' | 'peer' | 'clouddriver',
      group: FastifyPluginAsync<T>,
    ): FastifyPluginAsync<T> =>
    async (app, deps) => {
      await group(app, deps);
      if (route.context === context && route.url) app.get(route.url, () => ({ stray: true }));
    };
  return { route, withStray };
});

vi.mock('../../../src/plugin-server/api/admin-routes.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/plugin-server/api/admin-routes.js')>();
  return { ...real, adminRoutes: stray.withStray('admin', real.adminRoutes) };
});
vi.mock('../../../src/plugin-server/api/peer-routes.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/plugin-server/api/peer-routes.js')>();
  return { ...real, peerRoutes: stray.withStray('peer', real.peerRoutes) };
});
vi.mock('../../../src/plugin-server/api/credential-routes.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../../src/plugin-server/api/credential-routes.js')>();
  return { ...real, credentialRoutes: stray.withStray('clouddriver', real.credentialRoutes) };
});

const NAMES: Record<Context, string> = {
  admin: 'the admin API',
  peer: 'the peer API',
  clouddriver: 'the Clouddriver surface',
};

describe('REST route contexts: a route registered in the wrong context fails at startup', () => {
  let server: PluginServer | undefined;

  async function start(context?: Context, url?: string): Promise<void> {
    stray.route.context = context;
    stray.route.url = url;
    const config = parsePluginServerConfig('grpc: {host: 127.0.0.1, port: 0}\nhttp: {host: 127.0.0.1, port: 0}\n');
    server = new PluginServer(config, { log: pino({ level: 'silent' }) });
    await server.start();
  }

  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it.each([
    ['admin', '/applications/stray'],
    ['admin', '/internal/stray'],
    ['peer', '/armory/stray'],
    ['peer', '/credentials/stray'],
    ['clouddriver', '/armory/stray'],
    ['clouddriver', '/admin/stray'],
    ['clouddriver', '/internal/stray'],
  ] as const)('%s context, route %s: refused', async (context, url) => {
    await expect(start(context, url)).rejects.toThrow(`route ${url} does not belong in ${NAMES[context]}`);
  });

  it.each([
    ['admin', '/armory/stray'],
    ['peer', '/internal/stray'],
    ['clouddriver', '/applications/stray'],
  ] as const)('%s context, route %s: starts and serves it', async (context, url) => {
    await start(context, url);
    const res = await fetch(`http://127.0.0.1:${server!.httpPort}${url}`);
    // Served by the context it was registered in (the peer API answers 401 to a caller without the peer secret).
    expect(res.status).toBe(context === 'peer' ? 401 : 200);
  });
});
