/**
 * Fuzz-style hostility against a real plugin-server process (loopback only, bounded loops): random bytes and
 * malformed HTTP/2 at the gRPC port, malformed gRPC frames and protobuf, an oversized message, malformed JSON at
 * every REST route. The server stays up, a well-behaved agent session opened before is unaffected, and memory
 * stays bounded.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect as http2Connect, constants as h2 } from 'node:http2';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, status } from '@grpc/grpc-js';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AgentServiceClient, AgentMessage, PROTOCOL_VERSION, type ServerMessage } from '../../../src/shared/proto.js';
import { wireAccount } from '../../infra/records.js';
import { PluginServerProcess } from '../../infra/processes.js';
import { probe, waitFor } from './_security.js';

const dir = mkdtempSync(join(tmpdir(), 'scale-agent-sec-fuzz-'));
const adminToken = randomBytes(24).toString('hex');
let server: PluginServerProcess;
const rounds = 8;

/** A good agent session held open through the whole test. */
function openGoodSession() {
  const client = new AgentServiceClient(server.grpcAddress, credentials.createInsecure());
  const call = client.connect();
  const received: ServerMessage[] = [];
  let error: Error | undefined;
  call.on('data', (m: ServerMessage) => received.push(m));
  call.on('error', (e: Error) => (error = e));
  call.write({
    hello: {
      agentId: 'fuzz-good-agent',
      version: 'test',
      zone: '',
      identity: {},
      accounts: [
        wireAccount('fuzz-good', { apiServerHost: 'fuzz-good:443', caFingerprint: '', kubernetesVersion: '' }),
      ],
      protocolVersion: PROTOCOL_VERSION,
      shareLoad: false,
    },
  });
  // Heartbeats as a real agent sends them (the server closes a stream silent for 60 s): on a loaded machine the
  // fuzzing below can take longer than that, and the point is that garbage elsewhere leaves this stream alone.
  const heartbeat = setInterval(() => call.write({ heartbeat: { sentAtMs: Date.now() } }), 10_000);
  heartbeat.unref();
  call.on('close', () => clearInterval(heartbeat));
  return { client, call, received, error: () => error };
}

function rawBytes(payload: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const s = netConnect(server.grpcPort, '127.0.0.1', () => s.end(payload));
    s.on('error', () => resolve());
    s.on('close', () => resolve());
    s.setTimeout(2000, () => s.destroy());
  });
}

/** One gRPC call on a raw HTTP/2 session with hand-made frames; resolves with the grpc-status it ended with. */
function rawGrpc(frames: Buffer[]): Promise<string> {
  return new Promise((resolve) => {
    const session = http2Connect(`http://127.0.0.1:${server.grpcPort}`);
    session.on('error', () => resolve('session-error'));
    const req = session.request({
      [h2.HTTP2_HEADER_METHOD]: 'POST',
      [h2.HTTP2_HEADER_PATH]: '/scaleagent.v1.AgentService/Connect',
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let grpcStatus = 'none';
    req.on('response', (headers) => {
      if (headers['grpc-status'] !== undefined) grpcStatus = String(headers['grpc-status']);
    });
    req.on('trailers', (t) => (grpcStatus = String(t['grpc-status'])));
    req.on('data', () => undefined);
    req.on('error', () => undefined);
    req.on('close', () => {
      session.close();
      resolve(grpcStatus);
    });
    // A frame the server is still waiting to complete (truncated, or a huge announced length) just sits there;
    // we hang up after a while, which is what a real peer would see too.
    req.setTimeout(2000, () => {
      grpcStatus = 'client-timeout';
      req.close(h2.NGHTTP2_CANCEL);
    });
    for (const f of frames) req.write(f);
    req.end();
  });
}

const frame = (payload: Buffer, compressed = 0, length = payload.length) => {
  const h = Buffer.alloc(5);
  h[0] = compressed;
  h.writeUInt32BE(length, 1);
  return Buffer.concat([h, payload]);
};

async function rss(): Promise<number> {
  return server.metric('scale_agent_plugin_server_process_resident_memory_bytes');
}

beforeAll(async () => {
  const tokensFile = join(dir, 'tokens');
  writeFileSync(tokensFile, `${adminToken} fuzzer admin\n`);
  server = await PluginServerProcess.start({
    dir,
    name: 'fuzz-server',
    extra: { http: { auth: { tokensFile } }, limits: { maxMessageBytes: 65536 } },
  });
}, 60_000);

afterAll(async () => {
  await server?.stop();
});

it('survives garbage at both ports, closing only the offending streams', async () => {
  const good = openGoodSession();
  await waitFor('good session welcomed', () => good.received.some((m) => m.welcome));
  const rssBefore = await rss();

  // 1. Random bytes, and an HTTP/2 preface followed by garbage, straight at the gRPC port.
  for (let i = 0; i < rounds; i++) {
    await rawBytes(randomBytes(1 + ((i * 997) % 8192)));
    await rawBytes(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), randomBytes(512)]));
  }

  process.stderr.write('fuzz: raw bytes done\n');
  // 2. Malformed gRPC frames: random protobuf, a length prefix far beyond the limit, a compressed flag with no
  //    encoding, a truncated frame. Each ends its own call with a non-OK status.
  const statuses = new Set<string>();
  for (let i = 0; i < rounds; i++) {
    statuses.add(await rawGrpc([frame(randomBytes(16 + (i % 64) * 31))]));
  }
  statuses.add(await rawGrpc([frame(randomBytes(64), 0, 512 * 1024 * 1024)]));
  statuses.add(await rawGrpc([frame(randomBytes(64), 1)]));
  statuses.add(await rawGrpc([frame(randomBytes(64)).subarray(0, 20)]));
  // A valid Hello followed by a data message that breaks the protocol (seq going backwards).
  const hello = AgentMessage.encode({
    hello: {
      agentId: 'fuzz-bad',
      version: 'x',
      zone: '',
      identity: {},
      accounts: [],
      protocolVersion: 1,
      shareLoad: false,
    },
  }).finish();
  const backwards = AgentMessage.encode({
    bookmark: { seq: 0, account: 'x', kind: undefined, namespace: '', resourceVersion: '' },
  }).finish();
  statuses.add(await rawGrpc([frame(Buffer.from(hello)), frame(Buffer.from(backwards))]));
  process.stderr.write(`fuzz: gRPC call outcomes ${JSON.stringify([...statuses])}\n`);
  // OK only ever ends a call whose client half-closed before saying anything wrong; nothing got a Welcome.
  expect([...statuses].every((s) => /^\d+$|client-timeout|session-error|none/.test(s))).toBe(true);

  process.stderr.write('fuzz: frames done\n');
  // 3. An oversized message through a real client: RESOURCE_EXHAUSTED for that call only.
  const big = await probe(server.grpcAddress, credentials.createInsecure(), {}, []).then(
    () =>
      new Promise<{ code?: number }>((resolve) => {
        const client = new AgentServiceClient(server.grpcAddress, credentials.createInsecure());
        const call = client.connect();
        call.on('error', (e: { code?: number }) => {
          client.close();
          resolve(e);
        });
        call.on('data', () => undefined);
        call.write({
          hello: {
            agentId: 'fuzz-big',
            version: 'x',
            zone: '',
            identity: { blob: 'x'.repeat(200_000) },
            accounts: [],
            protocolVersion: 1,
            shareLoad: false,
          },
        });
      }),
  );
  expect(big.code).toBe(status.RESOURCE_EXHAUSTED);

  process.stderr.write('fuzz: oversized done\n');
  // 4. Malformed JSON at every REST route, with and without a token: 4xx with a code, never 5xx.
  const paths = [
    '/armory/accounts/dynamic',
    '/armory/accounts',
    '/armory/accounts/x',
    '/armory/agents',
    '/armory/agent/assignments',
    '/credentials',
    '/credentials/x',
    '/manifests/x/y/z',
    '/kubernetes/ops',
    '/kubernetes/ops/deployManifest',
    '/ops',
    '/ops/deployManifest',
    '/task/x',
    '/cache/kubernetes/manifest',
    '/admin/cache/x',
    '/healthz',
    '/nowhere',
  ];
  const bodies = ['{', '{"name":', '[1,2', 'null', '\u0000\u0001', '{"a":'.repeat(2000), 'x'.repeat(2 * 1024 * 1024)];
  for (const path of paths) {
    for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
      for (const body of bodies) {
        for (const token of [undefined, adminToken]) {
          let res: Response;
          try {
            res = await fetch(server.httpBase + path, {
              method,
              headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
              body,
            });
          } catch (e) {
            // A body over the 1 MiB limit may be refused (401/413) and the connection closed before the client has
            // written all of it: the client then sees EPIPE/ECONNRESET instead of the answer. That is the server
            // protecting itself, not failing; what must hold is that it still answers at once.
            const code = ((e as Error).cause as NodeJS.ErrnoException | undefined)?.code;
            expect(body.length > 1024 * 1024 && ['EPIPE', 'ECONNRESET'].includes(code ?? ''), `${e}`).toBe(true);
            expect((await server.get('/readyz')).status).toBe(200);
            continue;
          }
          const text = await res.text();
          const what = `${method} ${path} ${body.slice(0, 20)}: ${text.slice(0, 200)}`;
          expect(res.status, what).toBeLessThan(500);
          // 'null' is valid JSON that some routes accept; everything else here is malformed.
          if (body !== 'null') expect(res.status, what).toBeGreaterThanOrEqual(400);
          if (res.status >= 400) expect((JSON.parse(text) as { code?: string }).code, what).toMatch(/^SA_ERR_/);
        }
      }
    }
  }

  // The server is up, ready, and the good session never noticed.
  expect((await server.get('/readyz')).status).toBe(200);
  expect(good.error()).toBeUndefined();
  const before = good.received.length;
  good.call.write({ heartbeat: { sentAtMs: Date.now() } });
  await waitFor('heartbeat answered on the good session', () => good.received.length > before);
  const agents = (await fetch(`${server.httpBase}/armory/agents`, {
    headers: { authorization: `Bearer ${adminToken}` },
  }).then((r) => r.json())) as { agentId: string; accounts: string[] }[];
  expect(agents.find((a) => a.agentId === 'fuzz-good-agent')?.accounts).toEqual(['fuzz-good']);
  expect(agents.map((a) => a.agentId)).not.toContain('fuzz-bad');
  // Memory stays bounded: no per-garbage-connection leftovers worth speaking of.
  const rssAfter = await rss();
  expect(rssAfter - rssBefore).toBeLessThan(256 * 1024 * 1024);
  good.call.cancel();
  good.client.close();
}, 300_000);
