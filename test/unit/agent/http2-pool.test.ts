import http2, { constants } from 'node:http2';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Http2Pool } from '../../../src/agent/kube/http2-pool.js';

const servers: http2.Http2Server[] = [];
const pools: Http2Pool[] = [];

afterEach(async () => {
  for (const p of pools.splice(0)) p.close();
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

async function serve(onStream: (stream: http2.ServerHttp2Stream, path: string) => void): Promise<Http2Pool> {
  const server = http2.createServer();
  server.on('stream', (stream, headers) => onStream(stream, String(headers[':path'])));
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const pool = new Http2Pool({ origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, tls: {} });
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
});
