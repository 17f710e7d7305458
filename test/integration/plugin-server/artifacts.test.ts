/**
 * Standalone artifacts against a real plugin-server process: `GET /artifacts/credentials` in Clouddriver's shape, and
 * `PUT /artifacts/fetch/` of http/file artifacts from a local HTTP server this test runs (the artifact source): Basic
 * and bearer authorization read from files (a rotated file applies at once), redirects followed only within the
 * allow-list, credentials kept from another origin, a source's error, an artifact past maxBytes, a source that never
 * answers. In front mode, the list and the other types come from the upstream Clouddriver (a stand-in answering
 * ArtifactController's shapes, since Clouddriver cannot run here).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PluginServerProcess } from '../../infra/processes.js';

const manifest = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-http\ndata:\n  color: teal\n';
const MAX_BYTES = 4096;

interface Seen {
  path: string;
  host: string;
  authorization: string | undefined;
}

/** The artifact source: what an artifact repository (a web server, Artifactory, GitLab's raw files) answers. */
function startSource(): Promise<{ server: Server; port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const path = req.url ?? '/';
    const host = req.headers.host ?? '';
    const auth = req.headers.authorization;
    seen.push({ path, host, authorization: auth });
    const port = (server.address() as AddressInfo).port;
    if (path === '/basic/app.yml') {
      const expected = `Basic ${Buffer.from(currentPassword).toString('base64')}`;
      if (auth !== expected) return res.writeHead(401, { 'www-authenticate': 'Basic' }).end();
      return res.writeHead(200, { 'content-type': 'text/yaml' }).end(manifest);
    }
    if (path === '/token/app.yml') {
      if (auth !== 'Bearer s3cr3t-token') return res.writeHead(403).end();
      return res.end(manifest);
    }
    if (path === '/open/app.yml') return res.end(manifest);
    if (path === '/moved') return res.writeHead(302, { location: '/open/app.yml' }).end();
    if (path === '/to-localhost') return res.writeHead(302, { location: `http://localhost:${port}/echo` }).end();
    if (path === '/echo') return res.end(manifest);
    if (path === '/big') return res.end('x'.repeat(MAX_BYTES + 1));
    if (path === '/big-chunked') {
      // No content-length: the limit must hold while reading.
      res.writeHead(200, { 'transfer-encoding': 'chunked' });
      for (let i = 0; i <= MAX_BYTES / 512; i++) res.write('y'.repeat(512));
      return res.end();
    }
    if (path === '/hang') return; // never answers
    res.writeHead(404).end('no such file');
  });
  let currentPassword = 'deployer:first';
  Object.assign(server, {
    setPassword: (p: string) => {
      currentPassword = p;
    },
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, port: (server.address() as AddressInfo).port, seen })),
  );
}

async function put(base: string, body: unknown): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${base}/artifacts/fetch/`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

const dir = mkdtempSync(join(tmpdir(), 'sa-artifacts-'));
let source: Awaited<ReturnType<typeof startSource>>;
let server: PluginServerProcess;
const basicFile = join(dir, 'basic');
const tokenFile = join(dir, 'token');

const http = (account: string, path: string, host = '127.0.0.1') => ({
  type: 'http/file',
  artifactAccount: account,
  name: 'app.yml',
  reference: `http://${host}:${source.port}${path}`,
});

beforeAll(async () => {
  source = await startSource();
  writeFileSync(basicFile, 'deployer:first\n');
  writeFileSync(tokenFile, 's3cr3t-token\n');
  const here = `127.0.0.1:${source.port}`;
  server = await PluginServerProcess.start({
    dir,
    extra: {
      spinnaker: {
        artifacts: {
          timeoutMs: 1500,
          maxBytes: MAX_BYTES,
          http: [
            { name: 'files-basic', allowedHosts: [here], usernamePasswordFile: basicFile },
            { name: 'files-token', allowedHosts: [here], tokenFile },
            { name: 'files-open', allowedHosts: [here, `localhost:${source.port}`] },
            { name: 'files-two-origins', allowedHosts: [here, `localhost:${source.port}`], tokenFile },
          ],
        },
      },
    },
  });
});

afterAll(async () => {
  await server?.stop();
  source?.server.closeAllConnections();
  await new Promise((r) => source?.server.close(r));
});

describe('standalone artifacts', () => {
  it('lists the artifact accounts as Clouddriver does: embedded first, then the http accounts', async () => {
    const res = await server.get('/artifacts/credentials');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { name: 'embedded-artifact', types: ['embedded/base64'], type: 'artifacts-embedded' },
      { name: 'files-basic', types: ['http/file'], type: 'artifacts-http' },
      { name: 'files-token', types: ['http/file'], type: 'artifacts-http' },
      { name: 'files-open', types: ['http/file'], type: 'artifacts-http' },
      { name: 'files-two-origins', types: ['http/file'], type: 'artifacts-http' },
    ]);
  });

  it('fetches http/file artifacts with the account’s Basic or bearer authorization, read at each fetch', async () => {
    const basic = await put(server.httpBase, http('files-basic', '/basic/app.yml'));
    expect(basic).toMatchObject({ status: 200, text: manifest });
    expect(basic.type).toMatch(/application\/octet-stream/);
    expect(await put(server.httpBase, http('files-token', '/token/app.yml'))).toMatchObject({
      status: 200,
      text: manifest,
    });

    // The Secret is rotated: the next fetch sends the new password, without a restart.
    (source.server as unknown as { setPassword(p: string): void }).setPassword('deployer:second');
    expect((await put(server.httpBase, http('files-basic', '/basic/app.yml'))).status).toBe(502);
    writeFileSync(basicFile, 'deployer:second');
    expect(await put(server.httpBase, http('files-basic', '/basic/app.yml'))).toMatchObject({
      status: 200,
      text: manifest,
    });
    // An account without credentials sends none.
    await put(server.httpBase, http('files-open', '/open/app.yml'));
    expect(source.seen.at(-1)).toMatchObject({ path: '/open/app.yml', authorization: undefined });
  });

  it('follows redirects within the allow-list only, and keeps credentials from another origin', async () => {
    expect(await put(server.httpBase, http('files-open', '/moved'))).toMatchObject({ status: 200, text: manifest });

    // files-basic does not allow localhost: the redirect is refused before anything is asked of it.
    const before = source.seen.length;
    const refused = await put(server.httpBase, http('files-basic', '/to-localhost'));
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.text).message).toMatch(/"files-basic" does not fetch from localhost:\d+/);
    expect(source.seen.slice(before).map((s) => s.path)).toEqual(['/to-localhost']);

    // files-two-origins allows both: the hop to localhost is made, without the token meant for 127.0.0.1.
    const followed = await put(server.httpBase, http('files-two-origins', '/to-localhost'));
    expect(followed).toMatchObject({ status: 200, text: manifest });
    expect(source.seen.slice(-2)).toEqual([
      { path: '/to-localhost', host: `127.0.0.1:${source.port}`, authorization: 'Bearer s3cr3t-token' },
      { path: '/echo', host: `localhost:${source.port}`, authorization: undefined },
    ]);
  });

  it('refuses a host outside the allow-list without connecting, and names what went wrong otherwise', async () => {
    const before = source.seen.length;
    const outside = await put(server.httpBase, http('files-open', '/open/app.yml', '127.0.0.2'));
    expect(outside.status).toBe(400);
    expect(JSON.parse(outside.text)).toMatchObject({
      code: 'SA_ERR_INVALID_INPUT',
      message: expect.stringMatching(/does not fetch from 127\.0\.0\.2:\d+: its allowedHosts are 127\.0\.0\.1:\d+/),
    });
    expect(source.seen.length).toBe(before);

    const missing = await put(server.httpBase, http('files-open', '/nope.yml'));
    expect(missing.status).toBe(502);
    expect(JSON.parse(missing.text).message).toMatch(/\/nope\.yml answered 404 to artifact account "files-open"/);
    for (const path of ['/big', '/big-chunked']) {
      const big = await put(server.httpBase, http('files-open', path));
      expect(big.status).toBe(413);
      expect(JSON.parse(big.text).message).toMatch(/larger than 4096 bytes/);
    }
    const hang = await put(server.httpBase, http('files-open', '/hang'));
    expect(hang.status).toBe(504);
    expect(JSON.parse(hang.text).message).toMatch(/\/hang: no complete answer within 1500 ms/);

    const unknown = await put(server.httpBase, http('nobody', '/open/app.yml'));
    expect(unknown.status).toBe(404);
    const github = await put(server.httpBase, { type: 'github/file', reference: 'https://api.github.com/x' });
    expect(github.status).toBe(400);
    expect(JSON.parse(github.text).message).toMatch(
      /artifact type "github\/file" cannot be fetched here: .*only embedded\/base64 and http\/file artifacts.*front mode/,
    );
    // The server is still serving after all of that.
    const embedded = { type: 'embedded/base64', reference: Buffer.from(manifest).toString('base64') };
    expect(await put(server.httpBase, embedded)).toMatchObject({ status: 200, text: manifest });
  });
});

describe('artifacts in front mode', () => {
  let clouddriver: Server;
  let front: PluginServerProcess;
  const forwarded: { method: string; path: string; body: string }[] = [];
  // Stand-in for Clouddriver's ArtifactController: its account list and a fetch, in its shapes.
  const upstreamAccounts = [
    { name: 'embedded-artifact', types: ['embedded/base64', 'remote/base64'], type: 'artifacts-embedded' },
    { name: 'github', types: ['github/file'], type: 'artifacts-github' },
  ];

  beforeAll(async () => {
    clouddriver = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        forwarded.push({ method: req.method ?? '', path: req.url ?? '', body });
        if (req.url === '/artifacts/credentials') return res.end(JSON.stringify(upstreamAccounts));
        if (req.url === '/artifacts/fetch/' || req.url === '/artifacts/fetch') return res.end('from clouddriver');
        if (req.url?.startsWith('/credentials')) return res.end('[]');
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((r) => clouddriver.listen(0, '127.0.0.1', r));
    front = await PluginServerProcess.start({
      dir,
      name: 'front',
      extra: {
        spinnaker: { upstream: { baseUrl: `http://127.0.0.1:${(clouddriver.address() as AddressInfo).port}` } },
      },
    });
  });

  afterAll(async () => {
    await front?.stop();
    clouddriver?.closeAllConnections();
    await new Promise((r) => clouddriver?.close(r));
  });

  it('answers Clouddriver’s account list and passes other types there; embedded stays here', async () => {
    expect((await front.get('/artifacts/credentials')).body).toEqual(upstreamAccounts);
    const github = { type: 'github/file', artifactAccount: 'github', reference: 'https://api.github.com/x' };
    expect(await put(front.httpBase, github)).toMatchObject({ status: 200, text: 'from clouddriver' });
    expect(forwarded.find((f) => f.method === 'PUT')?.body).toBe(JSON.stringify(github));
    const embedded = { type: 'embedded/base64', reference: Buffer.from(manifest).toString('base64') };
    const count = forwarded.length;
    expect(await put(front.httpBase, embedded)).toMatchObject({ status: 200, text: manifest });
    expect(forwarded.filter((f) => f.path.startsWith('/artifacts')).length).toBe(
      forwarded.slice(0, count).filter((f) => f.path.startsWith('/artifacts')).length,
    );
  });
});
