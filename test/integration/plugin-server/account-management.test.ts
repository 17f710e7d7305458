/**
 * Accounts defined in bulk (Armory's migrate endpoint, `POST /armory/accounts`) and through Clouddriver's account
 * management (`POST`/`PUT /credentials`, `DELETE /credentials/{name}`), against a real plugin-server process with a
 * real agent on the real control plane: definitions become dynamic accounts, an ACTIVE one is watched and cached,
 * identical definitions change nothing, bad items are named by index and field, a static account's name is 409,
 * and definitions outside `accounts.management.pattern` are refused with the way to front mode. The forward hook is
 * exercised on an in-process server, the one way to inject it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
import { PluginServer } from '../../../src/plugin-server/server.js';
import { createLogger } from '../../../src/shared/logging.js';
import { createNamespace, kubectl, testEnv, waitFor } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess, sendJson } from '../../infra/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'sa-account-mgmt-'));
let server: PluginServerProcess;
let agent: AgentProcess;
let ns: string;
let ns2: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = any;

const api = (method: string, path: string, body?: unknown, base = server.httpBase) =>
  sendJson<Body>(base + path, method, body);

const dynamicNames = async (): Promise<string[]> =>
  ((await api('GET', '/armory/accounts?limit=1000')).body.items as { name: string; dynamic?: boolean }[])
    .filter((a) => a.dynamic)
    .map((a) => a.name)
    .sort();

const cachedConfigMaps = async (account: string): Promise<string[]> => {
  const r = await api('GET', `/admin/cache/${account}?kind=ConfigMap`);
  return r.status === 200
    ? (r.body as { namespace: string; name: string }[]).map((o) => `${o.namespace}/${o.name}`)
    : [];
};

beforeAll(async () => {
  ns = await createNamespace('acct-mgmt');
  ns2 = await createNamespace('acct-mgmt-b');
  await kubectl(['create', 'configmap', 'first', '-n', ns, '--from-literal=k=v']);
  await kubectl(['create', 'configmap', 'second', '-n', ns2, '--from-literal=k=v']);
  server = await PluginServerProcess.start({
    dir,
    extra: { accounts: { gracePeriodSeconds: 600, management: { pattern: 'managed-.*' } } },
  });
  agent = await AgentProcess.start({
    dir,
    agentId: 'mgmt-agent',
    serverAddress: server.grpcAddress,
    accounts: [{ name: 'static-one', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] }],
  });
}, 120_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
});

describe('POST /armory/accounts (bulk migrate)', () => {
  const kubeconfigFile = () => testEnv().kubeconfig;

  it('creates dynamic accounts, INACTIVE unless the item says ACTIVE; the ACTIVE one is watched', async () => {
    const r = await api('POST', '/armory/accounts', [
      { name: 'mig-idle', kubeconfigFile: kubeconfigFile(), namespaces: [ns], kinds: ['ConfigMap'] },
      { name: 'mig-live', kubeconfigFile: kubeconfigFile(), namespaces: [ns], kinds: ['ConfigMap'], state: 'ACTIVE' },
    ]);
    expect(r.status).toBe(202);
    expect(r.body.dryRun).toBe(false);
    expect(r.body.results.map((x: Body) => [x.index, x.name, x.outcome, x.account.state])).toEqual([
      [0, 'mig-idle', 'created', 'INACTIVE'],
      [1, 'mig-live', 'created', expect.stringMatching(/ACTIVE|ORPHANED/)],
    ]);
    await waitFor('mig-live cached', async () => (await cachedConfigMaps('mig-live')).includes(`${ns}/first`));
    expect((await api('GET', '/armory/accounts/mig-idle')).body.state).toBe('INACTIVE');
    expect(await cachedConfigMaps('mig-idle')).toEqual([]);
  });

  it('is idempotent: the same definitions again change nothing (200, unchanged)', async () => {
    const before = (await api('GET', '/armory/accounts/mig-live')).body.lastUpdated;
    const r = await api('POST', '/armory/accounts', [
      { name: 'mig-idle', kubeconfigFile: kubeconfigFile(), namespaces: [ns], kinds: ['ConfigMap'] },
      { name: 'mig-live', kubeconfigFile: kubeconfigFile(), namespaces: [ns], kinds: ['ConfigMap'], state: 'ACTIVE' },
    ]);
    expect(r.status).toBe(200);
    expect(r.body.results.map((x: Body) => x.outcome)).toEqual(['unchanged', 'unchanged']);
    expect((await api('GET', '/armory/accounts/mig-live')).body.lastUpdated).toBe(before);
  });

  it('a dry run reports the update and changes nothing; the real run updates, and the cache follows', async () => {
    const item = { name: 'mig-live', kubeconfigFile: kubeconfigFile(), namespaces: [ns2], kinds: ['ConfigMap'] };
    const dry = await api('POST', '/armory/accounts?dryRun=true', [item, { name: 'mig-new', serviceAccount: true }]);
    expect(dry.status).toBe(200);
    expect(dry.body).toMatchObject({
      dryRun: true,
      results: [
        { name: 'mig-live', outcome: 'updated' },
        { name: 'mig-new', outcome: 'created' },
      ],
    });
    expect((await api('GET', '/armory/accounts/mig-live')).body.namespaces).toEqual([ns]);
    expect(await dynamicNames()).toEqual(['mig-idle', 'mig-live']);

    const real = await api('POST', '/armory/accounts', [item]);
    expect(real.status).toBe(202);
    expect(real.body.results[0]).toMatchObject({ outcome: 'updated', account: { namespaces: [ns2] } });
    await waitFor('mig-live follows its namespaces', async () => {
      const names = await cachedConfigMaps('mig-live');
      return names.includes(`${ns2}/second`) && !names.includes(`${ns}/first`);
    });
  });

  it('refuses a batch with an invalid item, naming its index and field, and creates none of it', async () => {
    const exclusive = await api('POST', '/armory/accounts', [
      { name: 'mig-ok', serviceAccount: true },
      { name: 'mig-bad', serviceAccount: true, namespaces: ['a'], omitNamespaces: ['b'] },
    ]);
    expect(exclusive.status).toBe(400);
    expect(exclusive.body.code).toBe('SA_ERR_INVALID_INPUT');
    expect(exclusive.body.message).toMatch(/^item 1 \(mig-bad\) omitNamespaces: namespaces and omitNamespaces/);

    const schema = await api('POST', '/armory/accounts', [
      { name: 'mig-ok', serviceAccount: true },
      { name: 'mig-ok2', serviceAccount: true },
      { name: 'not a name!', serviceAccount: true },
    ]);
    expect(schema.status).toBe(400);
    expect(schema.body.message).toContain('body/2/name');

    const noSource = await api('POST', '/armory/accounts', [{ name: 'mig-nosource' }]);
    expect(noSource.status).toBe(400);
    expect(noSource.body.message).toMatch(/^item 0 \(mig-nosource\).*exactly one of kubeconfigContents/);

    const twice = await api('POST', '/armory/accounts', [
      { name: 'mig-twice', serviceAccount: true },
      { name: 'mig-twice', serviceAccount: true },
    ]);
    expect(twice.status).toBe(400);
    expect(twice.body.message).toContain("item 1: name mig-twice is also item 0's");

    for (const raw of ['[]', '{"name":"mig-obj","serviceAccount":true}', '[{"name": ']) {
      const r = await fetch(`${server.httpBase}/armory/accounts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: raw,
      });
      expect(r.status, raw).toBe(400);
    }
    expect(await dynamicNames()).toEqual(['mig-idle', 'mig-live']);
  });

  it('answers 409 for a name an agent configures (static), naming the item, and changes nothing', async () => {
    await waitFor('static-one registered', async () => (await api('GET', '/credentials/static-one')).status === 200);
    const r = await api('POST', '/armory/accounts', [
      { name: 'mig-other', serviceAccount: true },
      { name: 'static-one', serviceAccount: true },
    ]);
    expect(r.status).toBe(409);
    expect(r.body.code).toBe('SA_ERR_CONFLICT');
    expect(r.body.errors).toEqual([expect.stringMatching(/^item 1: account static-one is configured on its agent/)]);
    expect(await dynamicNames()).toEqual(['mig-idle', 'mig-live']);
  });
});

describe("Clouddriver's account management (POST/PUT /credentials, DELETE /credentials/{name})", () => {
  const definition = () => ({
    type: 'kubernetes',
    name: 'managed-a',
    kubeconfigFile: testEnv().kubeconfig,
    namespaces: [ns],
    kinds: ['configMap'],
    permissions: { READ: ['dev'], WRITE: ['ops'], EXECUTE: ['ci'] },
    cacheThreads: 2,
  });

  it('POST creates a dynamic account that is used at once, answering with the definition', async () => {
    const r = await api('POST', '/credentials', definition());
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ type: 'kubernetes', name: 'managed-a', namespaces: [ns], state: 'ACTIVE' });
    await waitFor('managed-a cached', async () => (await cachedConfigMaps('managed-a')).includes(`${ns}/first`));
    const creds = await api('GET', '/credentials/managed-a');
    expect(creds.status).toBe(200);
    expect(creds.body.permissions).toEqual({ READ: ['dev'], WRITE: ['ops'] });
    expect((await api('GET', '/armory/accounts/managed-a')).body).toMatchObject({ dynamic: true, state: 'ACTIVE' });

    const again = await api('POST', '/credentials', definition());
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('SA_ERR_CONFLICT');
  });

  it('PUT replaces the definition (what it leaves out goes back to the default); the cache follows', async () => {
    const { permissions: _p, ...rest } = definition();
    const r = await api('PUT', '/credentials', { ...rest, namespaces: [ns2] });
    expect(r.status).toBe(200);
    const view = (await api('GET', '/armory/accounts/managed-a')).body;
    expect(view).toMatchObject({ namespaces: [ns2], permissions: { READ: [], WRITE: [] } });
    await waitFor('managed-a follows', async () => (await cachedConfigMaps('managed-a')).includes(`${ns2}/second`));

    const missing = await api('PUT', '/credentials', { ...rest, name: 'managed-missing' });
    expect(missing.status).toBe(404);
    const bad = await api('PUT', '/credentials', { ...rest, namespaces: 'not-a-list' });
    expect(bad.status).toBe(400);
    expect(bad.body.message).toContain('namespaces');
  });

  it('DELETE removes it; /credentials no longer lists it', async () => {
    const r = await api('DELETE', '/credentials/managed-a');
    expect(r.status).toBe(200);
    expect((await api('GET', '/credentials/managed-a')).status).toBe(404);
    expect(await dynamicNames()).not.toContain('managed-a');
    expect((await api('DELETE', '/credentials/managed-a')).status).toBe(404);
  });

  it('refuses what it does not handle with 400 naming the pattern and front mode; changes nothing', async () => {
    const cases: [string, string, unknown][] = [
      ['POST', '/credentials', { ...definition(), name: 'elsewhere-a' }],
      ['POST', '/credentials', { ...definition(), type: 'aws' }],
      ['PUT', '/credentials', { ...definition(), name: 'elsewhere-a' }],
      ['DELETE', '/credentials/elsewhere-a', undefined],
      ['POST', '/credentials', [definition()]],
    ];
    for (const [method, path, body] of cases) {
      const r = await api(method, path, body);
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.message).toContain('accounts.management.pattern (managed-.*)');
      expect(r.body.message).toContain('spinnaker.upstream.baseUrl');
    }
    expect(await dynamicNames()).toEqual(['mig-idle', 'mig-live']);
  });

  it('a static account is never replaced through PUT', async () => {
    const s = await PluginServerProcess.start({
      dir,
      name: 'static-pattern',
      extra: { accounts: { management: { pattern: 'static-.*' } } },
    });
    try {
      const a = await AgentProcess.start({
        dir,
        agentId: 'static-pattern-agent',
        serverAddress: s.grpcAddress,
        accounts: [
          { name: 'static-two', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] },
        ],
      });
      try {
        const r = await api('PUT', '/credentials', { ...definition(), name: 'static-two' }, s.httpBase);
        expect(r.status, JSON.stringify(r.body)).toBe(409);
        expect((await api('POST', '/credentials', { ...definition(), name: 'static-two' }, s.httpBase)).status).toBe(
          409,
        );
        expect((await api('DELETE', '/credentials/static-two', undefined, s.httpBase)).status).toBe(409);
      } finally {
        await a.stop();
      }
    } finally {
      await s.stop();
    }
  });
});

describe('the forward hook (front mode wires it)', () => {
  it('hands every definition outside the pattern to forward(request, reply), untouched', async () => {
    const seen: { method: string; url: string; body: unknown }[] = [];
    const forward = (request: FastifyRequest, reply: FastifyReply) => {
      seen.push({ method: request.method, url: request.url, body: request.body });
      return reply.code(299).send({ forwarded: true });
    };
    const config = parsePluginServerConfig(
      'grpc: {host: 127.0.0.1, port: 0}\nhttp: {host: 127.0.0.1, port: 0}\naccounts: {management: {pattern: "mine-.*"}}\n',
    );
    const log = createLogger({ name: 'in-process', level: 'silent' });
    const inProcess = new PluginServer(config, { log, forwardAccountManagement: forward });
    await inProcess.start();
    try {
      const base = `http://127.0.0.1:${inProcess.httpPort}`;
      const theirs = { type: 'kubernetes', name: 'theirs', kubeconfigFile: '/k' };
      expect(await api('POST', '/credentials', theirs, base)).toEqual({ status: 299, body: { forwarded: true } });
      expect((await api('DELETE', '/credentials/theirs', undefined, base)).status).toBe(299);
      const mine = await api('POST', '/credentials', { ...theirs, name: 'mine-1', serviceAccount: true }, base);
      expect(mine.status).toBe(400); // ours, and invalid: two kubeconfig sources; never forwarded
      expect(seen).toEqual([
        { method: 'POST', url: '/credentials', body: theirs },
        { method: 'DELETE', url: '/credentials/theirs', body: undefined },
      ]);
    } finally {
      await inProcess.stop();
    }
  });
});
