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
});
