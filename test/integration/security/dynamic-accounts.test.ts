/**
 * Dynamic accounts end to end (issue 6) and the authenticated admin API: create → the agent watches → objects
 * cached → namespaces updated → cache follows → plugin-server restart keeps the definition → delete → watches
 * stop and cache cleared. The kubeconfig carries a canary that must not show up in any API response, log line or
 * plaintext database column. Real plugin-server and agent processes, real control plane, real MariaDB.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mysql from 'mysql2/promise';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNamespace, createServiceAccount, createTestDatabase, kubectl } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';
import { CONFIGMAP_READER, waitFor } from './_security.js';

const dir = mkdtempSync(join(tmpdir(), 'scale-agent-sec-dyn-'));
const CANARY = `canary-${randomBytes(12).toString('hex')}`;
const adminToken = randomBytes(24).toString('hex');
const readToken = randomBytes(24).toString('hex');
const responses: string[] = [];
let db: Awaited<ReturnType<typeof createTestDatabase>>;
let server: PluginServerProcess;
let agent: AgentProcess;
let ns1: string;
let ns2: string;
let saToken: string;
let kubeconfigWithCanary: string;

async function api(method: string, path: string, opts: { token?: string; body?: unknown; raw?: string } = {}) {
  const headers: Record<string, string> = {};
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  if (opts.body !== undefined || opts.raw !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(server.httpBase + path, {
    method,
    headers,
    body: opts.raw ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body)),
  });
  const text = await res.text();
  responses.push(text);
  const json = (res.headers.get('content-type') ?? '').includes('json');
  return {
    status: res.status,
    body: (json && text ? JSON.parse(text) : undefined) as Record<string, unknown> & unknown[],
  };
}

const cacheNames = async (account: string): Promise<string[] | undefined> => {
  const r = await api('GET', `/admin/cache/${account}?kind=ConfigMap`, { token: readToken });
  return r.status === 200
    ? (r.body as unknown as { namespace: string; name: string }[]).map((o) => `${o.namespace}/${o.name}`)
    : undefined;
};

beforeAll(async () => {
  db = await createTestDatabase('sec_dyn');
  ns1 = await createNamespace('sec-dyn-a');
  ns2 = await createNamespace('sec-dyn-b');
  await kubectl(['create', 'configmap', 'in-first', '-n', ns1, '--from-literal=k=v']);
  await kubectl(['create', 'configmap', 'in-second', '-n', ns2, '--from-literal=k=v']);
  const sa = await createServiceAccount({ namespace: ns1, name: 'dyn-reader', clusterRules: CONFIGMAP_READER });
  saToken = sa.token;
  kubeconfigWithCanary = `# ${CANARY}\n${readFileSync(sa.kubeconfigPath, 'utf8')}`;
  const tokensFile = join(dir, 'api-tokens');
  writeFileSync(tokensFile, `${adminToken} ops admin\n${readToken} dashboards read\n`, { mode: 0o600 });
  const keyFile = join(dir, 'dynamic.key');
  writeFileSync(keyFile, randomBytes(32).toString('base64'), { mode: 0o600 });
  server = await PluginServerProcess.start({
    dir,
    name: 'dyn-server',
    storage: { type: 'mysql', url: db.url },
    extra: {
      http: { auth: { tokensFile, trustedNetworks: ['127.0.0.1/32', '::1/128'] } },
      dynamicAccounts: { encryptionKeyFile: keyFile },
    },
  });
  agent = await AgentProcess.start({
    dir,
    agentId: 'dyn-agent',
    serverAddress: server.grpcAddress,
    accounts: [],
    extra: { zone: 'zone-1' },
  });
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  await db?.drop();
});

describe('admin API authentication', () => {
  const body = () => ({ name: 'dyn-auth', zoneId: 'zone-1', serviceAccount: true });

  it('probes stay open; the admin API needs a token; Clouddriver reads are open to the trusted network', async () => {
    expect((await api('GET', '/healthz')).status).toBe(200);
    expect((await api('GET', '/readyz')).status).toBe(200);
    expect((await api('GET', '/metrics')).status).toBe(200);
    expect((await api('GET', '/credentials')).status).toBe(200);
    const r = await api('GET', '/armory/accounts');
    expect(r.status).toBe(401);
    expect(r.body.code).toBe('SA_ERR_UNAUTHENTICATED');
    expect((await api('GET', '/armory/accounts', { token: 'not-a-token-not-a-token' })).status).toBe(401);
    expect((await api('GET', '/armory/accounts', { token: readToken })).status).toBe(200);
  });

  it('401 without a token, 403 with a read-only token, and nothing changes', async () => {
    expect((await api('POST', '/armory/accounts/dynamic', { body: body() })).status).toBe(401);
    const forbidden = await api('POST', '/armory/accounts/dynamic', { token: readToken, body: body() });
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.code).toBe('SA_ERR_FORBIDDEN');
    expect((await api('DELETE', '/armory/accounts/dyn-auth', { token: readToken })).status).toBe(403);
    expect((await api('GET', '/armory/accounts/dyn-auth', { token: readToken })).status).toBe(404);
  });

  it('bad bodies get 400 with a code and change nothing', async () => {
    const before = (await api('GET', '/armory/accounts', { token: readToken })).body.total;
    const bad = [
      '{"name": "dyn-bad",',
      '[]',
      '"just a string"',
      JSON.stringify({ name: 'dyn-bad' }),
      JSON.stringify({ name: 'dyn bad!', serviceAccount: true }),
      JSON.stringify({ name: 'dyn-bad', serviceAccount: true, kubeconfigFile: '/x' }),
      JSON.stringify({ name: 'dyn-bad', serviceAccount: true, namespaces: 'a' + 'x'.repeat(300) }),
      JSON.stringify({ name: 'dyn-bad', serviceAccount: true, namespaces: ['a'], omitNamespaces: ['b'] }),
    ];
    for (const raw of bad) {
      const r = await api('POST', '/armory/accounts/dynamic', { token: adminToken, raw });
      expect(r.status, raw).toBe(400);
      expect(r.body.code, raw).toBe('SA_ERR_INVALID_INPUT');
    }
    const put = await api('PUT', '/armory/accounts/dynamic', { token: adminToken, raw: JSON.stringify([body()]) });
    expect(put.status).toBe(400);
    expect((await api('GET', '/armory/accounts', { token: readToken })).body.total).toBe(before);
  });

  it('an admin token can create, and the audit log names who did it', async () => {
    const r = await api('POST', '/armory/accounts/dynamic', {
      token: adminToken,
      body: { ...body(), state: 'INACTIVE' },
    });
    expect(r.status).toBe(201);
    expect(r.body.state).toBe('INACTIVE');
    expect((await api('DELETE', '/armory/accounts/dyn-auth', { token: adminToken })).status).toBe(202);
    // The server logs asynchronously: wait for the last line to be written.
    const audit = await waitFor('audit lines', () => {
      const lines = readFileSync(server.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"audit":true'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      return lines.some((l) => l.what === 'dynamic account deleted' && l.account === 'dyn-auth') ? lines : undefined;
    });
    expect(audit).toContainEqual(
      expect.objectContaining({ who: 'token:ops', what: 'dynamic account created', account: 'dyn-auth', result: 'ok' }),
    );
    expect(audit).toContainEqual(expect.objectContaining({ who: 'token:dashboards', result: 'denied', status: 403 }));
    expect(audit).toContainEqual(
      expect.objectContaining({ who: 'token:ops', what: 'dynamic account deleted', account: 'dyn-auth' }),
    );
  });
});

describe('dynamic account lifecycle', () => {
  it('create → watched → cached → namespaces updated → cache follows → survives a restart → deleted → cleared', async () => {
    const created = await api('POST', '/armory/accounts/dynamic', {
      token: adminToken,
      body: {
        name: 'dyn-one',
        zoneId: 'zone-1',
        kubeconfigContents: kubeconfigWithCanary,
        namespaces: [ns1],
        kinds: ['ConfigMap'],
      },
    });
    expect(created.status).toBe(201);
    expect(JSON.stringify(created.body)).not.toContain(CANARY);
    expect(created.body.source).toBe('kubeconfigContents');

    await waitFor(
      'dyn-one ACTIVE',
      async () => (await api('GET', '/armory/accounts/dyn-one', { token: readToken })).body.state === 'ACTIVE',
    );
    const first = await waitFor('dyn-one cache', async () => {
      const names = await cacheNames('dyn-one');
      return names?.includes(`${ns1}/in-first`) ? names : undefined;
    });
    // kube-root-ca.crt is in every namespace; nothing outside the account's namespace is.
    expect(first.every((n) => n.startsWith(`${ns1}/`))).toBe(true);
    const listed = await api('GET', '/armory/accounts?page=1&limit=10', { token: readToken });
    expect(
      (listed.body.items as unknown as { name: string; dynamic?: boolean; zoneId: string }[]).find(
        (a) => a.name === 'dyn-one',
      ),
    ).toMatchObject({ dynamic: true, zoneId: 'zone-1' });

    // Update: the cache follows the new namespace list (old objects go, new ones come).
    const updated = await api('PUT', '/armory/accounts/dynamic', {
      token: adminToken,
      body: { name: 'dyn-one', namespaces: [ns2] },
    });
    expect(updated.status).toBe(202);
    await waitFor('cache follows the namespaces', async () => {
      const names = await cacheNames('dyn-one');
      return names?.includes(`${ns2}/in-second`) && names.every((n) => n.startsWith(`${ns2}/`));
    });

    // The definition lives in MySQL: a restarted server knows it and the reconnecting agent serves it again.
    await server.restart();
    await waitFor(
      'dyn-one ACTIVE after restart',
      async () => (await api('GET', '/armory/accounts/dyn-one', { token: readToken })).body.state === 'ACTIVE',
    );
    await waitFor('cache after restart', async () => (await cacheNames('dyn-one'))?.includes(`${ns2}/in-second`));

    // Deactivate and activate again.
    const off = await api('PATCH', '/armory/accounts', {
      token: adminToken,
      body: [{ name: 'dyn-one', state: 'INACTIVE' }],
    });
    expect(off.status).toBe(202);
    await waitFor('deactivated: cache cleared', async () => (await cacheNames('dyn-one')) === undefined);
    await api('PATCH', '/armory/accounts', { token: adminToken, body: [{ name: 'dyn-one', state: 'ACTIVE' }] });
    await waitFor('reactivated', async () => (await cacheNames('dyn-one'))?.includes(`${ns2}/in-second`));

    // Delete: the agent stops watching, the cache is cleared.
    expect((await api('DELETE', '/armory/accounts/dyn-one', { token: adminToken })).status).toBe(202);
    expect((await api('GET', '/armory/accounts/dyn-one', { token: readToken })).status).toBe(404);
    expect(await cacheNames('dyn-one')).toBeUndefined();
    await waitFor('the agent dropped dyn-one', async () => {
      const accounts = (await (await fetch(`${agent.adminBase}/accounts`)).json()) as { name: string }[];
      return !accounts.some((a) => a.name === 'dyn-one');
    });
    await kubectl(['create', 'configmap', 'after-delete', '-n', ns2, '--from-literal=k=v']);
    expect(await cacheNames('dyn-one')).toBeUndefined();
  });

  it('permissions of a dynamic account reach /credentials; changing only them keeps the watches and the cache', async () => {
    const bad = await api('POST', '/armory/accounts/dynamic', {
      token: adminToken,
      body: { name: 'dyn-bad-perms', kubeconfigContents: kubeconfigWithCanary, permissions: { READ: ['two words'] } },
    });
    expect(bad.status).toBe(400);
    const created = await api('POST', '/armory/accounts/dynamic', {
      token: adminToken,
      body: {
        name: 'dyn-perms',
        zoneId: 'zone-1',
        kubeconfigContents: kubeconfigWithCanary,
        namespaces: [ns1],
        kinds: ['ConfigMap'],
        permissions: { READ: ['Dyn-Readers'], WRITE: ['dyn-ops'] },
        onlySpinnakerManaged: true,
      },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      permissions: { READ: ['Dyn-Readers'], WRITE: ['dyn-ops'] },
      onlySpinnakerManaged: true,
      cacheAllApplicationRelationships: false,
    });
    await waitFor('dyn-perms cache', async () => (await cacheNames('dyn-perms'))?.includes(`${ns1}/in-first`));
    // Through the agent's Hello into the account record, served as Fiat reads it.
    expect((await api('GET', '/credentials/dyn-perms')).body).toMatchObject({
      permissions: { READ: ['dyn-readers'], WRITE: ['dyn-ops'] },
      onlySpinnakerManaged: true,
    });

    const updated = await api('PUT', '/armory/accounts/dynamic', {
      token: adminToken,
      body: { name: 'dyn-perms', permissions: { READ: ['auditors'] } },
    });
    expect(updated.status).toBe(202);
    expect(updated.body).toMatchObject({ permissions: { READ: ['auditors'], WRITE: [] }, namespaces: [ns1] });
    // A change of the watches drops the account before answering; this one did not.
    expect(await cacheNames('dyn-perms')).toContain(`${ns1}/in-first`);
    await waitFor('the new permissions in /credentials', async () => {
      const r = await api('GET', '/credentials/dyn-perms');
      return JSON.stringify(r.body.permissions) === JSON.stringify({ READ: ['auditors'] });
    });
    expect((await api('DELETE', '/armory/accounts/dyn-perms', { token: adminToken })).status).toBe(202);
  });

  it('an account that cannot reach its cluster shows FAILED with error_message and failed_count', async () => {
    const broken = kubeconfigWithCanary.replace(/server: \S+/, 'server: https://127.0.0.1:1');
    expect(
      (
        await api('POST', '/armory/accounts/dynamic', {
          token: adminToken,
          body: { name: 'dyn-broken', zoneId: 'zone-1', kubeconfigContents: broken },
        })
      ).status,
    ).toBe(201);
    const view = await waitFor('dyn-broken FAILED', async () => {
      const r = await api('GET', '/armory/accounts/dyn-broken', { token: readToken });
      return r.body.state === 'FAILED' ? r.body : undefined;
    });
    expect(view.error_message).toMatch(/ECONNREFUSED|connect/i);
    expect(view.failed_count).toBeGreaterThanOrEqual(1);
    await api('DELETE', '/armory/accounts/dyn-broken', { token: adminToken });
  });

  it('the kubeconfig canary is in no API response, no log line and no plaintext database column', async () => {
    for (const body of responses) {
      expect(body).not.toContain(CANARY);
      expect(body).not.toContain(saToken);
    }
    for (const file of [server.logFile, agent.logFile]) {
      const text = readFileSync(file, 'utf8');
      expect(text).not.toContain(CANARY);
      expect(text).not.toContain(saToken);
    }
    // Re-create it so a row exists, then read every column of every table as bytes.
    await api('POST', '/armory/accounts/dynamic', {
      token: adminToken,
      body: { name: 'dyn-canary', zoneId: 'nowhere', kubeconfigContents: kubeconfigWithCanary, state: 'INACTIVE' },
    });
    const conn = await mysql.createConnection(db.url);
    try {
      const [tables] = await conn.query<mysql.RowDataPacket[]>('SHOW TABLES');
      let rowsSeen = 0;
      for (const t of tables) {
        const [rows] = await conn.query<mysql.RowDataPacket[]>(`SELECT * FROM \`${String(Object.values(t)[0])}\``);
        for (const row of rows) {
          rowsSeen += 1;
          for (const v of Object.values(row)) {
            const bytes = Buffer.isBuffer(v) ? v : Buffer.from(typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
            expect(bytes.includes(CANARY)).toBe(false);
            expect(bytes.includes(saToken)).toBe(false);
          }
        }
      }
      expect(rowsSeen).toBeGreaterThan(0);
      const [sealed] = await conn.query<mysql.RowDataPacket[]>(
        "SELECT kubeconfig_sealed FROM sa_dynamic_accounts WHERE name = 'dyn-canary'",
      );
      expect((sealed[0]?.kubeconfig_sealed as Buffer).length).toBeGreaterThan(kubeconfigWithCanary.length);
    } finally {
      await conn.end();
    }
  });
});
