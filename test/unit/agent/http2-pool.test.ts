import http2, { constants } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Http2Pool, sharedHttp2Pool } from '../../../src/agent/kube/http2-pool.js';

const servers: http2.Http2Server[] = [];
const pools: Http2Pool[] = [];

afterEach(async () => {
  for (const p of pools.splice(0)) p.close();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(
  onStream: (stream: http2.ServerHttp2Stream, path: string) => void,
  options: { responseTimeoutMs?: number } = {},
): Promise<Http2Pool> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => onStream(stream, String(headers[':path'])));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const pool = new Http2Pool({
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tls: {},
    ...options,
  });
  pools.push(pool);
  return pool;
}

describe('Http2Pool', () => {
  it('fails a request whose stream is reset with NO_ERROR before any response, instead of waiting forever', async () => {
    const pool = await serve((stream, path) => {
      if (path === '/reset') stream.close(constants.NGHTTP2_NO_ERROR);
      else stream.respond({ ':status': 200 }, { endStream: true });
    });
    await expect(pool.request({ ':path': '/reset' })).rejects.toThrow(/closed before a response/);
    // The session stays usable for the next request.
    const { headers } = await pool.request({ ':path': '/ok' });
    expect(headers[':status']).toBe(200);
  });

  it('fails the pending requests of a session the server closes without an error', async () => {
    const pool = await serve((stream) => stream.session?.destroy());
    await expect(pool.request({ ':path': '/hang' })).rejects.toThrow();
  });

  it('cancels and fails a request the server never answers, instead of waiting forever', async () => {
    const pool = await serve(() => undefined, { responseTimeoutMs: 200 });
    await expect(pool.request({ ':path': '/never' })).rejects.toThrow(/no response/);
  });

  it("never puts more streams on a connection than the server's MAX_CONCURRENT_STREAMS, even for concurrent first requests", async () => {
    // Watches hold their streams open: a request queued behind the limit would wait forever.
    const server = http2.createServer({ settings: { maxConcurrentStreams: 3 } });
    server.on('stream', (stream) => stream.respond({ ':status': 200 })); // headers now, body never (like a watch)
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const pool = new Http2Pool({
      origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      tls: {},
      responseTimeoutMs: 5_000,
    });
    pools.push(pool);
    const answered = await Promise.all(Array.from({ length: 8 }, () => pool.request({ ':path': '/watch' })));
    expect(answered.map((a) => a.headers[':status'])).toEqual(Array(8).fill(200));
    expect(pool.sessionCount).toBe(3); // 3 + 3 + 2 streams
    for (const a of answered) a.stream.close();
  });

  it('opens one connection for concurrent first requests, shared by every user of the same server and TLS settings', async () => {
    const pool = await serve((stream) => stream.respond({ ':status': 200 }, { endStream: true }));
    const origin = (pool as unknown as { options: { origin: string } }).options.origin;
    const a = sharedHttp2Pool({ origin, tls: {} });
    const b = sharedHttp2Pool({ origin, tls: {} });
    const other = sharedHttp2Pool({ origin, tls: { servername: 'elsewhere' } });
    try {
      expect(a.pool).toBe(b.pool);
      expect(other.pool).not.toBe(a.pool);
      await Promise.all(Array.from({ length: 20 }, () => a.pool.request({ ':path': '/' })));
      await Promise.all(Array.from({ length: 20 }, () => b.pool.request({ ':path': '/' })));
      expect(a.pool.sessionCount).toBe(1);
      a.release();
      expect(b.pool.isClosed).toBe(false);
    } finally {
      b.release();
      other.release();
    }
    expect(b.pool.isClosed).toBe(true);
  });

  it('does not PING a connection destroyed a moment ago, whose streams have not closed yet (ping() would throw)', async () => {
    const pool = await serve((stream) => stream.respond({ ':status': 200 })); // headers now, body never (a watch)
    const { stream } = await pool.request({ ':path': '/watch' });
    stream.on('error', () => undefined);
    // The probe runs from a timer once a connection with open streams has read nothing for readIdleMs. Driving it
    // directly is the only way to land in the window between destroy() and the 'close' events that follow it.
    const internals = pool as unknown as { sessions: { lastRead: number }[]; checkHealth(): void };
    for (const s of internals.sessions) s.lastRead = 0;
    stream.session?.destroy();
    expect(pool.sessionCount).toBe(1);
    expect(() => internals.checkHealth()).not.toThrow();
    // The pool drops the dead connection and opens a new one for the next request.
    await new Promise((r) => stream.once('close', r));
    const next = await pool.request({ ':path': '/watch' });
    expect(next.headers[':status']).toBe(200);
    expect(pool.sessionCount).toBe(1);
    next.stream.close();
  });

  it('keeps the first bytes of a watch for a reader that attaches after its own awaits', async () => {
    // Headers and the first event in one write, so they usually arrive in one socket read; the reflector starts
    // reading only after awaiting the response. A stream the pool had put in flowing mode would have emitted the
    // event to nobody by then, and the watch would have lost it.
    const pool = await serve((stream) => {
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200 });
      stream.write('{"type":"ADDED","object":{"metadata":{"name":"first"}}}\n'); // and no end, as a watch
    });
    const { stream } = await pool.request({ ':path': '/watch' });
    await new Promise((r) => setTimeout(r, 50));
    for await (const chunk of stream) {
      expect((chunk as Buffer).toString()).toBe('{"type":"ADDED","object":{"metadata":{"name":"first"}}}\n');
      break;
    }
  });

  it('hands the stream to onResponse as its headers arrive, so a whole answer is read before the caller awaits', async () => {
    const pool = await serve((stream) => {
      stream.respond({ ':status': 200 });
      stream.end('{"kind":"ConfigMapList","items":[]}');
    });
    let body: Promise<string> | undefined;
    const read = async (s: http2.ClientHttp2Stream): Promise<string> => {
      const chunks: Buffer[] = [];
      for await (const chunk of s) chunks.push(chunk as Buffer);
      return Buffer.concat(chunks).toString();
    };
    await pool.request({ ':path': '/list' }, undefined, undefined, (s) => {
      body = read(s);
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await body).toBe('{"kind":"ConfigMapList","items":[]}');
  });

  it('PINGs a connection that reads nothing for readIdleMs, and not one whose watch keeps reading', async () => {
    const pings: string[] = [];
    const server = http2.createServer();
    server.on('session', (session) =>
      session.on('ping', () => pings.push(session === quietSession ? 'quiet' : 'busy')),
    );
    let quietSession: http2.Http2Session | undefined;
    const timers: NodeJS.Timeout[] = [];
    server.on('stream', (stream, headers) => {
      stream.on('error', () => undefined);
      stream.respond({ ':status': 200 });
      if (headers[':path'] === '/quiet') quietSession = stream.session;
      else timers.push(setInterval(() => stream.write('{"type":"BOOKMARK"}\n'), 20));
    });
    servers.push(server);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      // Two pools (each has its own connections), so the two watches are on two connections.
      const busy = new Http2Pool({ origin, tls: {}, readIdleMs: 100 });
      const quiet = new Http2Pool({ origin, tls: {}, readIdleMs: 100 });
      pools.push(busy, quiet);
      const a = await busy.request({ ':path': '/busy' });
      a.stream.resume();
      await quiet.request({ ':path': '/quiet' });
      await new Promise((r) => setTimeout(r, 600));
      expect(pings).toContain('quiet');
      expect(pings).not.toContain('busy');
    } finally {
      for (const t of timers) clearInterval(t);
    }
  });
});
