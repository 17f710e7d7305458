import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streamChunks } from '../../../src/agent/kube/stream-chunks.js';

const GONE = '{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}}\n';
/** 300 watch events of ~1 KB each, numbered, so order and completeness show. */
const LONG = Array.from({ length: 300 }, (_, i) => `{"type":"ADDED","n":${i},"pad":"${'x'.repeat(1000)}"}\n`).join('');

/**
 * How the agent reads a watch (reflector.ts, secret-engine.ts): the pool opens the stream paused, resolves at its
 * response headers, and the reader takes it from there.
 */
describe('streamChunks: a watch answer read chunk by chunk', () => {
  let server: http2.Http2Server;
  let origin = '';

  beforeAll(async () => {
    server = http2.createServer();
    server.on('session', (session) => session.on('error', () => {}));
    server.on('stream', (stream, headers) => {
      stream.on('error', () => {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      const path = headers[':path'];
      if (path === '/gone') stream.end(GONE);
      else if (path === '/long') stream.end(LONG);
      else {
        // Half an event, then the stream is reset (the client sees an error), or its connection drops (the client
        // sees an end, and a close with code CANCEL).
        stream.write('{"type":"ADDED","obj');
        if (path === '/reset') setTimeout(() => stream.destroy(new Error('gone')), 20);
        else setTimeout(() => stream.session?.socket.destroy(), 20);
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => server?.close(r));
  });

  async function open(session: http2.ClientHttp2Session, path: string): Promise<http2.ClientHttp2Stream> {
    const stream = session.request({ ':path': path });
    stream.pause();
    await new Promise<void>((r) => stream.once('response', () => r()));
    return stream;
  }

  async function collect(stream: http2.ClientHttp2Stream): Promise<string> {
    let text = '';
    for await (const chunk of streamChunks(stream)) text += chunk.toString();
    return text;
  }

  // Node 24.20+ (nodejs/node#65677): the stream's own async iterator fails such a stream with "Premature close" and
  // drops its event, and the reflector then retried the expired resourceVersion instead of relisting.
  it('yields a whole answer that arrived, and closed its stream, before the reading began', async () => {
    const session = http2.connect(origin);
    session.on('error', () => {});
    try {
      for (let i = 0; i < 20; i++) {
        const stream = await open(session, '/gone');
        while (!stream.closed) await sleep(1);
        expect(await collect(stream)).toBe(GONE);
      }
    } finally {
      session.destroy();
    }
  });

  it('yields a long answer whole and in order, the rest held back while the reader holds a chunk', async () => {
    const session = http2.connect(origin);
    session.on('error', () => {});
    try {
      const stream = await open(session, '/long');
      let text = '';
      let pulls = 0;
      /** Per hold: whether the answer had been read to its end (its stream ended) while the reader held a chunk. */
      const endedWhileHeld: boolean[] = [];
      for await (const chunk of streamChunks(stream)) {
        text += chunk.toString();
        pulls += 1;
        if (pulls % 3 === 1) {
          // A reader whose queue is full stops pulling: the rest of the answer must wait at the server (HTTP/2 flow
          // control), not be read into memory meanwhile. 5 ms is ample for loopback to deliver all 300 KB.
          await sleep(5);
          endedWhileHeld.push(stream.readableEnded || stream.closed);
        }
      }
      expect(text).toBe(LONG);
      expect(pulls).toBeGreaterThan(10);
      // Flow control holds the answer back for all but the holds near its end.
      expect(endedWhileHeld.slice(0, 3)).toEqual([false, false, false]);
    } finally {
      session.destroy();
    }
  });

  it.each([
    ['/reset', /NGHTTP2_INTERNAL_ERROR/],
    ['/dropped', /code 8/],
  ])('yields what arrived, then fails, for an answer cut before its end (%s)', async (path, message) => {
    const session = http2.connect(origin);
    session.on('error', () => {});
    try {
      const stream = await open(session, path);
      let text = '';
      const error = await (async () => {
        for await (const chunk of streamChunks(stream)) text += chunk.toString();
      })().catch((e: unknown) => e);
      expect(text).toBe('{"type":"ADDED","obj');
      expect(error).toBeInstanceOf(Error);
      expect((error as Error).message).toMatch(message);
    } finally {
      session.destroy();
    }
  });
});
