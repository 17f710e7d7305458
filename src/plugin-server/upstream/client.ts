import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import { Pool, type Dispatcher } from 'undici';
import { ScaleAgentError } from '../../shared/errors.js';
import type { UpstreamConfig } from '../config.js';

/**
 * Hop-by-hop headers (RFC 9110 §7.6.1) belong to one connection and are not forwarded; `host` names this server,
 * and the upstream's own is set from baseUrl.
 */
const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
]);

export type HeaderMap = Record<string, string | string[] | undefined>;

/** The headers of a request or response with the hop-by-hop ones (and those the Connection header names) left out. */
export function endToEndHeaders(headers: HeaderMap | IncomingHttpHeaders): Record<string, string | string[]> {
  const named = String(headers.connection ?? '')
    .split(',')
    .map((h) => h.trim().toLowerCase())
    .filter(Boolean);
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (value === undefined || HOP_BY_HOP.has(lower) || named.includes(lower)) continue;
    out[lower] = value;
  }
  return out;
}

export interface UpstreamResponse {
  status: number;
  headers: Record<string, string | string[]>;
  /** A Readable (streamed as it comes when sent on) that can also be read whole (`text()`). */
  body: Dispatcher.ResponseData['body'];
}

export type UpstreamFailure = 'timeout' | 'connect';

/** Why the upstream gave no answer: a timeout (504 when proxied) or no connection (502). */
export class UpstreamUnreachable extends Error {
  constructor(
    readonly failure: UpstreamFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'UpstreamUnreachable';
  }

  toScaleAgentError(baseUrl: string): ScaleAgentError {
    return new ScaleAgentError(
      this.failure === 'timeout' ? 'TIMEOUT' : 'BAD_GATEWAY',
      `upstream Clouddriver ${baseUrl} ${this.failure === 'timeout' ? 'did not answer in time' : 'is unreachable'}: ${this.message}`,
      { cause: this },
    );
  }
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);

function unreachable(e: unknown): UpstreamUnreachable {
  const err = e as Error & { code?: string };
  const timeout = TIMEOUT_CODES.has(err.code ?? '') || err.name === 'TimeoutError';
  return new UpstreamUnreachable(timeout ? 'timeout' : 'connect', err.code ?? err.message, { cause: e });
}

/**
 * The one connection pool to the real Clouddriver (front mode), through undici: keep-alive connections, bounded
 * connect, header and body-idle timeouts, bodies streamed both ways and never decoded, so what passes through
 * arrives as it was sent.
 */
export class UpstreamClient {
  readonly baseUrl: string;
  private readonly pool: Pool;
  private readonly prefix: string;

  constructor(private readonly config: UpstreamConfig) {
    const url = new URL(config.baseUrl);
    this.baseUrl = config.baseUrl;
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.pool = new Pool(url.origin, {
      connect: { timeout: config.connectTimeoutMs },
      headersTimeout: config.timeoutMs,
      bodyTimeout: config.timeoutMs,
    });
  }

  /**
   * One request as the caller made it. `pathAndQuery` is the raw request target (`/x?y`), forwarded byte for byte;
   * `signal` bounds the whole exchange on top of the pool's timeouts.
   */
  async request(options: {
    method: string;
    pathAndQuery: string;
    headers: HeaderMap;
    body?: Readable | Buffer | string;
    signal?: AbortSignal;
  }): Promise<UpstreamResponse> {
    try {
      const res = await this.pool.request({
        method: options.method as 'GET',
        path: `${this.prefix}${options.pathAndQuery}`,
        headers: endToEndHeaders(options.headers),
        body: options.body ?? null,
        signal: options.signal,
      });
      return {
        status: res.statusCode,
        headers: endToEndHeaders(res.headers as HeaderMap),
        body: res.body,
      };
    } catch (e) {
      throw unreachable(e);
    }
  }

  /** GET answering JSON, read whole within timeoutMs; the status says whether `body` is the answer or an error. */
  async getJson(
    pathAndQuery: string,
    headers: HeaderMap,
    timeoutMs: number,
  ): Promise<{ status: number; body: unknown }> {
    const signal = AbortSignal.timeout(timeoutMs);
    const forwarded: HeaderMap = { ...headers, accept: 'application/json' };
    // Read here, not passed on: an identity body of the whole answer (no encoding, no 304 for a cached copy).
    for (const h of ['accept-encoding', 'content-length', 'content-type', 'if-none-match', 'if-modified-since']) {
      delete forwarded[h];
    }
    const res = await this.request({ method: 'GET', pathAndQuery, headers: forwarded, signal });
    try {
      const text = await res.body.text();
      let body: unknown;
      try {
        body = text === '' ? undefined : JSON.parse(text);
      } catch {
        body = undefined;
      }
      return { status: res.status, body };
    } catch (e) {
      throw unreachable(e);
    }
  }

  async close(): Promise<void> {
    await this.pool.close();
  }
}
