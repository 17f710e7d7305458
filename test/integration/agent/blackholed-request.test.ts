/**
 * A request written while the agent ↔ API-server link drops every byte (Toxiproxy's `timeout` toxic with timeout 0,
 * as in the fault suite's `blackhole:apiserver`, here held for as long as it takes) must end: the API server never
 * sees it, and nothing resets the connection, which only looks idle. The pool's PING probe of a connection that has
 * open streams but reads nothing is what notices; the response deadline is set out of reach here, so that it cannot be
 * what ends the request. (When the fault suite lifts the toxic, Toxiproxy closes the connection, and requests on it
 * fail at once: `HTTP/2 stream closed before a response (rstCode 8)`.) Real kube-apiserver, real Toxiproxy.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { loadClusterAccess, tlsOptionsOf } from '../../../src/agent/kube/kubeconfig.js';
import { Http2Pool } from '../../../src/agent/kube/http2-pool.js';
import { apiServerHostPort, kubeconfigThrough, Toxiproxy } from '../../infra/toxiproxy.js';

describe('a request swallowed by a blackholed API-server link', () => {
  const cleanups: (() => Promise<unknown> | void)[] = [];
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c();
  });

  it('fails when the connection does not answer a PING, instead of waiting for an answer for ever', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sa-blackhole-'));
    const toxi = await Toxiproxy.start(dir);
    cleanups.push(() => toxi.stop());
    const through = await toxi.createProxy('apiserver', apiServerHostPort());
    const access = await loadClusterAccess({ kubeconfigFile: kubeconfigThrough(through, join(dir, 'kubeconfig')) });
    const pool = new Http2Pool({
      origin: access.server.origin,
      tls: tlsOptionsOf(access),
      readIdleMs: 500,
      pingTimeoutMs: 2_000,
      responseTimeoutMs: 3_600_000,
    });
    cleanups.push(() => pool.close());
    const authorization = await access.authorization();
    const get = () =>
      pool.request({
        ':method': 'GET',
        ':path': '/api/v1/namespaces/default',
        ...(authorization ? { authorization } : {}),
      });

    const warm = await get();
    expect(warm.headers[':status']).toBe(200);
    // Read to its end before the link goes dark: a stream still open then is destroyed with the PING's error, and
    // nobody here would be listening for it (on a loaded machine the body can take that long).
    await finished(warm.stream.resume());

    for (const stream of ['upstream', 'downstream'] as const) {
      await toxi.addToxic('apiserver', `blackhole-${stream}`, stream, { type: 'timeout', attributes: { timeout: 0 } });
    }
    const outcome = await get().then(
      (r) => ({ answered: Number(r.headers[':status']) }),
      (e: unknown) => ({ failed: (e as Error).message }),
    );
    expect(outcome).toEqual({ failed: 'API server did not answer an HTTP/2 PING' });
    for (const stream of ['upstream', 'downstream'] as const)
      await toxi.removeToxic('apiserver', `blackhole-${stream}`);
    // The pool recovers: a new connection answers.
    const after = await get();
    expect(after.headers[':status']).toBe(200);
    await finished(after.stream.resume());
  }, 120_000);
});
