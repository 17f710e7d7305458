/**
 * The REST API's authentication by context (api/http.ts, auth/admin-auth.ts): the admin API's hook wants a token on
 * every admin route, even from a network trusted with the Clouddriver surface; the Clouddriver surface takes either.
 * A real plugin-server (memory store) on loopback, which is inside the trusted network here.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
import { PluginServer } from '../../../src/plugin-server/server.js';

const adminToken = randomBytes(24).toString('hex');
const readToken = randomBytes(24).toString('hex');
let server: PluginServer;
let base: string;

/** Every route of the admin API, with made-up parameters. */
const ADMIN_ROUTES: [method: string, path: string][] = [
  ['GET', '/armory/agents'],
  ['GET', '/armory/agents/agent-1'],
  ['GET', '/armory/accounts'],
  ['GET', '/armory/accounts/acct-1'],
  ['GET', '/agents/kubernetes/accounts/acct-1'],
  ['GET', '/admin/cache/acct-1'],
  ['GET', '/armory/agent/operations'],
  ['GET', '/armory/agent/operations/op-1'],
  ['POST', '/armory/accounts/dynamic'],
  ['PUT', '/armory/accounts/dynamic'],
  ['POST', '/armory/accounts'],
  ['PATCH', '/armory/accounts'],
  ['DELETE', '/armory/accounts'],
  ['DELETE', '/armory/accounts/acct-1'],
];

async function call(method: string, path: string, token?: string): Promise<number> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const res = await fetch(base + path, { method, headers });
  await res.arrayBuffer();
  return res.status;
}

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'scale-agent-admin-auth-'));
  const tokensFile = join(dir, 'api-tokens');
  writeFileSync(tokensFile, `${adminToken} ops admin\n${readToken} dashboards read\n`, { mode: 0o600 });
  const config = parsePluginServerConfig(
    `grpc: {host: 127.0.0.1, port: 0}\n` +
      `http: {host: 127.0.0.1, port: 0, auth: {tokensFile: ${tokensFile}, trustedNetworks: [127.0.0.1/32, '::1/128']}}`,
  );
  server = new PluginServer(config, { log: pino({ level: 'silent' }) });
  base = `http://127.0.0.1:${(await server.start()).httpPort}`;
});

afterAll(async () => {
  await server?.stop();
});

describe('REST authentication by context', () => {
  it('every admin route refuses a caller from the trusted network without a token (401)', async () => {
    for (const [method, path] of ADMIN_ROUTES)
      expect(`${method} ${path} ${await call(method, path)}`).toBe(`${method} ${path} 401`);
  });

  it('an encoded admin path is matched to its route, and so to the admin context', async () => {
    expect(await call('GET', '/%61rmory/accounts')).toBe(401);
    expect(await call('GET', '/%61rmory/accounts', readToken)).toBe(200);
  });

  it('admin reads pass with a read token; admin writes need an admin token (403)', async () => {
    expect(await call('GET', '/armory/accounts', readToken)).toBe(200);
    expect(await call('GET', '/armory/agent/operations', readToken)).toBe(200);
    expect(await call('DELETE', '/armory/accounts/acct-1', readToken)).toBe(403);
    expect(await call('DELETE', '/armory/accounts/acct-1', adminToken)).not.toBe(403);
  });

  it('the Clouddriver surface takes the trusted network; probes are open; unknown paths want a token', async () => {
    expect(await call('GET', '/credentials')).toBe(200);
    expect(await call('GET', '/applications')).toBe(200);
    expect(await call('GET', '/healthz')).toBe(200);
    expect(await call('GET', '/no-such-route')).toBe(401);
    expect(await call('GET', '/no-such-route', readToken)).toBe(404);
  });
});
