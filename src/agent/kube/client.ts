import { createHash, X509Certificate } from 'node:crypto';
import type { ClientHttp2Stream } from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeKubeIntent, KubeApiError, ScaleAgentError, type KubeRequestIntent } from '../../shared/errors.js';
import { versionInfo } from '../../shared/version.js';
import { NotSentError, sharedHttp2Pool, type Http2Pool } from './http2-pool.js';
import { Discovery } from './discovery.js';
import { loadClusterAccess, tlsOptionsOf, type ClusterAccess } from './kubeconfig.js';

export { KubeApiError };

export const isGone = (e: unknown): boolean =>
  e instanceof KubeApiError && (e.status === 410 || e.reason === 'Expired');
export const isForbidden = (e: unknown): boolean => e instanceof KubeApiError && e.status === 403;
export const isNotFound = (e: unknown): boolean => e instanceof KubeApiError && e.status === 404;

/** The facts that make two accounts the same cluster (Hello.accounts[].cluster). */
export interface ClusterIdentity {
  apiServerHost: string;
  caFingerprint: string;
  kubernetesVersion: string;
}

export interface KubeClientSource {
  kubeconfigFile?: string;
  /** The kubeconfig itself, from memory (a dynamic account's, or one read through a secret reference). */
  kubeconfigContents?: string;
  serviceAccount?: boolean;
  context?: string;
}

export interface KubeRequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  /** An object is sent as JSON; a string as is (YAML apply patches). */
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
  /** What the request means, for error messages. */
  intent?: KubeRequestIntent;
  /**
   * Attempts on transient failures (429, 5xx, connection resets, no response) with exponential backoff, Retry-After
   * honoured. Default 1: watches and lists have their own backoff. Operations pass more.
   */
  attempts?: number;
  /**
   * The request carries its operation's mark (ops/once-in-cluster.ts), and whoever sends it looks for that mark
   * before sending it again: if its outcome is unknown, resuming the operation is safe.
   */
  marked?: boolean;
}

/** Injectable for tests of the retry sequence. */
export interface RetryTiming {
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
}

const realTiming: RetryTiming = {
  sleep: (ms, signal) => sleep(ms, undefined, { signal }),
  random: Math.random,
};

/** The wait before attempt `attempt + 1` (attempt ≥ 1): Retry-After when given (capped), else 200 ms · 2^(n-1) ± 50 %. */
export function retryDelayMs(attempt: number, retryAfterSeconds: number | undefined, random: number): number {
  if (retryAfterSeconds !== undefined && retryAfterSeconds >= 0) return Math.min(retryAfterSeconds, 30) * 1000;
  const base = Math.min(200 * 2 ** (attempt - 1), 5000);
  return Math.round(base * (0.5 + random));
}

/** Transient: the API server (or the path to it) may answer differently in a moment. 409 is the caller's business. */
export function isTransient(e: unknown): boolean {
  if (e instanceof KubeApiError) return e.status === 429 || e.status >= 500;
  return e instanceof ScaleAgentError && e.kind === 'UNAVAILABLE';
}

/**
 * Whether sending this request twice can do twice what it does once: a create (POST; a second one is a 409 for an
 * object that was in fact created) and a JSON patch (an `add` to a list appends again). Merge and strategic patches,
 * server-side apply, PUT, DELETE and reads converge to the same state when repeated. A whole operation sent again
 * (Orca's resume) is another matter: ops/once-in-cluster.ts marks its changes so that a repeat finds them.
 */
export function mayApplyTwice(method: string, contentType: string | undefined): boolean {
  return method === 'POST' || (method === 'PATCH' && contentType === 'application/json-patch+json');
}

/** Whether the API server certainly did not act on the request: never sent, or refused by flow control (429). */
export function surelyNotApplied(e: unknown): boolean {
  if (e instanceof KubeApiError) return e.status === 429;
  return e instanceof ScaleAgentError && e.cause instanceof NotSentError;
}

/**
 * A request that may apply twice failed after it may have reached the API server (reset, no answer, a 5xx):
 * whether it took effect is unknown, so it is neither repeated here nor reported as retryable (a resumed task
 * would run it again). Seen in the fault suite: JSON-patch appends applied up to 4 times through a link that cut
 * connections after the request went out.
 */
export class OutcomeUnknownError extends ScaleAgentError {
  constructor(
    method: string,
    path: string,
    cause: unknown,
    /** The request carried its operation's mark: a resumed operation finds whether it applied (not retried here). */
    readonly resumable = false,
  ) {
    super(
      'UNAVAILABLE',
      `${method} ${path}: ${(cause as Error).message ?? String(cause)}; the API server may have applied it, so it is ` +
        'not repeated here (a second one could apply it twice): ' +
        (resumable
          ? "it carries the operation's mark, so resuming the operation is safe (the mark tells whether it applied)"
          : 'check the object before running the operation again'),
      { cause },
    );
  }
}

/** JSON requests, as operations make them. */
export interface KubeRequester {
  request<T>(method: string, path: string, options?: KubeRequestOptions): Promise<T>;
  getJson<T>(path: string, options?: Omit<KubeRequestOptions, 'body' | 'contentType'>): Promise<T>;
  /** A GET whose answer is text, not JSON (a container's log). */
  getText(path: string, options?: Omit<KubeRequestOptions, 'body' | 'contentType'>): Promise<string>;
}

/** Attempts per operation request: 429s and API-server restarts ride through; a dead server fails in ~6 s. */
export const OPERATION_ATTEMPTS = 5;

const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export interface KubeResponse {
  status: number;
  /** Paused, holding what has arrived: read it by async iteration (or resume() it), never by a bare 'data' listener. */
  stream: ClientHttp2Stream;
  /** The whole body, read from the moment the response arrived (when open() was asked for it). */
  body?: Promise<Buffer>;
}

/**
 * One account's access to its API server: credentials and TLS from its kubeconfig or ServiceAccount
 * (kubeconfig.ts; exec plugins and auth-providers through @kubernetes/client-node), requests over our own HTTP/2
 * pool — one connection for all the watches of every account that reaches the same API server with the same TLS
 * settings, as client-go shares a transport.
 */
export class KubeClient {
  readonly server: URL;
  readonly caPem: Buffer | undefined;
  private readonly pool: Http2Pool;
  private readonly releasePool: () => void;
  private readonly userAgent = `scale-agent/${versionInfo().version}`;
  /** One discovery cache for this account's watches and operations. */
  readonly discovery: Discovery;
  /** The kubeconfig context's namespace ('default' when it names none). */
  readonly defaultNamespace: string;
  timing: RetryTiming = realTiming;

  private constructor(private readonly access: ClusterAccess) {
    this.discovery = new Discovery((path, options) => this.getJson(path, options));
    this.defaultNamespace = access.namespace || 'default';
    this.server = access.server;
    this.caPem = access.ca;
    if (this.server.protocol !== 'https:') {
      throw new ScaleAgentError('INVALID_INPUT', `API server ${this.server.href}: only https is supported`);
    }
    ({ pool: this.pool, release: this.releasePool } = sharedHttp2Pool({
      origin: this.server.origin,
      proxyUrl: access.proxyUrl,
      tls: tlsOptionsOf(access),
    }));
  }

  static async create(source: KubeClientSource): Promise<KubeClient> {
    return new KubeClient(await loadClusterAccess(source));
  }

  /** host:port as the agent reaches it, and the SHA-256 of the CA certificate's DER. */
  localIdentity(): Omit<ClusterIdentity, 'kubernetesVersion'> {
    const port = this.server.port || '443';
    return { apiServerHost: `${this.server.hostname}:${port}`, caFingerprint: caFingerprint(this.caPem) };
  }

  async identity(signal?: AbortSignal): Promise<ClusterIdentity> {
    const version = await this.getJson<{ gitVersion?: string }>('/version', { signal });
    return { ...this.localIdentity(), kubernetesVersion: version.gitVersion ?? '' };
  }

  /** Opens a GET whose body the caller streams (watches); non-2xx answers are read and thrown as KubeApiError. */
  get(path: string, options: { accept?: string; signal?: AbortSignal } = {}): Promise<KubeResponse> {
    return this.open('GET', path, options);
  }

  async getJson<T>(path: string, options: Omit<KubeRequestOptions, 'body' | 'contentType'> = {}): Promise<T> {
    return this.request<T>('GET', path, options);
  }

  /** Any verb, JSON in and out; errors are KubeApiError (statuses) or ScaleAgentError UNAVAILABLE/TIMEOUT. */
  async request<T>(method: string, path: string, options: KubeRequestOptions = {}): Promise<T> {
    return this.read(method, path, options, (body) => (body.length ? parseAnswer(body, method, path) : {}) as T);
  }

  async getText(path: string, options: Omit<KubeRequestOptions, 'body' | 'contentType'> = {}): Promise<string> {
    return this.read('GET', path, { accept: '*/*', ...options }, (body) => body.toString('utf8'));
  }

  /**
   * The whole answer, decoded by `decode`, transient failures retried up to `options.attempts`. A body that does not
   * decode counts as one: the answer was damaged on its way, so a read is sent again and a write that may apply twice
   * is reported as of unknown outcome, like any other answer lost after the request went out.
   */
  private async read<T>(
    method: string,
    path: string,
    options: KubeRequestOptions,
    decode: (body: Buffer) => T,
  ): Promise<T> {
    const attempts = Math.max(1, options.attempts ?? 1);
    for (let attempt = 1; ; attempt++) {
      try {
        const body = await (await this.open(method, path, options, MAX_RESPONSE_BYTES)).body!;
        // A JSON read is always answered with a body (a log may be empty). None means the answer was cut off (seen in
        // the fault suite with a link that closes mid-response): such a read is retried, never taken as `{}`.
        if (body.length === 0 && method === 'GET' && options.accept === undefined) {
          throw new ScaleAgentError('UNAVAILABLE', `GET ${path}: the API server's answer ended without a body`);
        }
        return decode(body);
      } catch (e) {
        if (isTransient(e) && mayApplyTwice(method, options.contentType) && !surelyNotApplied(e)) {
          throw new OutcomeUnknownError(method, path, e, options.marked === true);
        }
        if (attempt >= attempts || !isTransient(e) || options.signal?.aborted) throw e;
        const retryAfter = e instanceof KubeApiError ? e.retryAfterSeconds : undefined;
        await this.timing.sleep(retryDelayMs(attempt, retryAfter, this.timing.random()), options.signal);
      }
    }
  }

  /**
   * Sends the request and waits for the response's headers. With `wholeBody`, the body is read from the moment they
   * arrive (KubeResponse.body), not after this method's awaits: Node may have the whole small answer, its end
   * included, before a later reader attaches, and such a reader gets "Premature close" (Node 24).
   */
  private async open(
    method: string,
    path: string,
    options: KubeRequestOptions,
    wholeBody?: number,
  ): Promise<KubeResponse> {
    let fullPath = path;
    const query = Object.entries(options.query ?? {}).filter((e): e is [string, string | number | boolean] => {
      return e[1] !== undefined;
    });
    if (query.length > 0) {
      const q = new URLSearchParams(query.map(([k, v]): [string, string] => [k, String(v)]));
      fullPath += `${path.includes('?') ? '&' : '?'}${q.toString()}`;
    }
    const authorization = await this.access.authorization();
    const headers: Record<string, string> = {
      ':method': method,
      ':path': fullPath,
      accept: options.accept ?? 'application/json',
      'user-agent': this.userAgent,
    };
    if (authorization) headers.authorization = authorization;
    let payload: Buffer | undefined;
    if (options.body !== undefined) {
      payload = Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
      headers['content-type'] = options.contentType ?? 'application/json';
    }
    let stream: ClientHttp2Stream;
    let response: Record<string, string | string[] | number | undefined>;
    let body: Promise<Buffer> | undefined;
    const readBody = (s: ClientHttp2Stream, limit: number): Promise<Buffer> => {
      body = readAnswer(s, limit);
      body.catch(() => undefined); // awaited below or by the caller; never an unhandled rejection meanwhile
      return body;
    };
    try {
      ({ stream, headers: response } = await this.pool.request(
        headers,
        options.signal,
        payload,
        wholeBody === undefined ? undefined : (s) => void readBody(s, wholeBody),
      ));
    } catch (e) {
      if (options.signal?.aborted) {
        throw new ScaleAgentError('TIMEOUT', `${method} ${path} aborted: ${abortReason(options.signal)}`, { cause: e });
      }
      throw new ScaleAgentError('UNAVAILABLE', `API server ${this.server.host} unreachable: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const status = Number(response[':status'] ?? 0);
    if (status >= 200 && status < 300) return { status, stream, body };
    // The status is the answer; its body only words it. A body cut short still leaves the status to act on (a 409 is
    // a conflict whether or not its message arrived whole).
    const errorBody = await (body ?? readBody(stream, 64 * 1024)).catch(() => Buffer.alloc(0));
    const retryAfter = Number(response['retry-after']);
    throw statusError(
      status,
      errorBody,
      method,
      path,
      options.intent,
      Number.isFinite(retryAfter) ? retryAfter : undefined,
    );
  }

  /** This client with transient failures retried, as operations use it. */
  retrying(attempts = OPERATION_ATTEMPTS): KubeRequester {
    return {
      request: (method, path, options = {}) => this.request(method, path, { attempts, ...options }),
      getJson: (path, options = {}) => this.getJson(path, { attempts, ...options }),
      getText: (path, options = {}) => this.getText(path, { attempts, ...options }),
    };
  }

  close(): void {
    this.releasePool();
  }

  /** Open HTTP/2 connections to the API server (one per ~100 watches, shared with same-cluster accounts). */
  get connections(): number {
    return this.pool.sessionCount;
  }
}

export function caFingerprint(caPem: Buffer | undefined): string {
  if (!caPem || caPem.length === 0) return '';
  try {
    // A bundle fingerprints as its first certificate: the one that identifies the cluster's CA.
    const cert = new X509Certificate(caPem);
    return createHash('sha256').update(cert.raw).digest('hex');
  } catch {
    return createHash('sha256').update(caPem).digest('hex');
  }
}

function abortReason(signal: AbortSignal): string {
  const reason: unknown = signal.reason;
  return reason instanceof Error && reason.name === 'TimeoutError' ? 'operation deadline reached' : 'cancelled';
}

/** A 2xx answer's JSON; one that is not JSON is a damaged answer (UNAVAILABLE), named with its first bytes. */
function parseAnswer(body: Buffer, method: string, path: string): unknown {
  const text = body.toString('utf8');
  try {
    return JSON.parse(text);
  } catch (e) {
    const start = JSON.stringify(text.slice(0, 60));
    throw new ScaleAgentError(
      'UNAVAILABLE',
      `${method} ${path}: the API server's answer is not JSON (${body.length} bytes, starting ${start}): ` +
        (e as Error).message,
      { cause: e },
    );
  }
}

function statusError(
  status: number,
  body: Buffer,
  method: string,
  path: string,
  intent: KubeRequestIntent | undefined,
  retryAfterSeconds: number | undefined,
): KubeApiError {
  let reason = '';
  let message: string;
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { reason?: string; message?: string };
    reason = parsed.reason ?? '';
    message = parsed.message ?? '';
  } catch {
    message = body.subarray(0, 300).toString('utf8');
  }
  if (!message) message = `HTTP ${status} for ${method} ${path}`;
  if (status === 403)
    message = `Forbidden: cannot ${intent ? describeKubeIntent(intent) : `${method} ${path}`}: ${message}`;
  return new KubeApiError(status, reason, message, intent, retryAfterSeconds);
}

/**
 * The whole body of an answer. An answer that did not end with its stream's END_STREAM was cut short on its way, and
 * is reported as `UNAVAILABLE` (a read is sent again, a write that may apply twice is of unknown outcome), never
 * returned as if whole: its connection closed under it (the stream then closes before its end), the session was
 * destroyed for an unanswered PING (the stream errors with the PING's error), or the server reset the stream.
 *
 * Read with 'data' and 'end' listeners, not async iteration: on Node 24.20 and later (nodejs/node#65677) iterating a
 * stream whose whole answer, END_STREAM included, arrived before the first read fails with "Premature close", though
 * every byte is there. An agent busy for a moment (a burst of watch events, a pause of the process) then reported
 * answered writes as of unknown outcome. The listeners attach at once and take the buffered bytes as they are.
 */
export function readAnswer(stream: ClientHttp2Stream, limit: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    // Taken now: a stream's `session` is gone once the stream closes.
    const session = stream.session;
    const settle = (error?: Error): void => {
      if (settled) return;
      settled = true;
      stream.off('data', onData);
      if (error) reject(error);
      else resolve(Buffer.concat(chunks));
    };
    const cutShort = (how: string): ScaleAgentError =>
      new ScaleAgentError('UNAVAILABLE', `API server answer cut short after ${size} bytes${how}`);
    // An answer that stopped without its END_STREAM: reset by the server, or its stream closed under it.
    const unfinished = (): ScaleAgentError =>
      stream.rstCode !== undefined && stream.rstCode !== 0
        ? cutShort(` (HTTP/2 stream reset, code ${stream.rstCode})`)
        : cutShort(' (its HTTP/2 stream closed before its end)');
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        stream.close();
        settle(new ScaleAgentError('INPUT_TOO_LARGE', `API server response larger than ${limit} bytes`));
        return;
      }
      chunks.push(chunk);
    };
    stream.on('data', onData);
    stream.once('end', () => {
      // A reset other than NO_ERROR may come with the end. And Node ends the streams of a destroyed session as if
      // whole (their close has code NO_ERROR, which it takes for the answer's end); the answer's own END_STREAM comes
      // while the session is up.
      const reset = stream.rstCode !== undefined && stream.rstCode !== 0;
      settle(reset || session?.destroyed ? unfinished() : undefined);
    });
    stream.once('error', (e: Error) => {
      if (e.name === 'AbortError') settle(e);
      else
        settle(
          new ScaleAgentError('UNAVAILABLE', `API server answer cut short after ${size} bytes: ${e.message}`, {
            cause: e,
          }),
        );
    });
    // After 'end' this does nothing (settled). Before it: closed without its end, by a reset or its session destroyed.
    stream.once('close', () => settle(unfinished()));
    stream.resume();
    // Destroyed before this reader came (its 'close' may be gone already): no end is coming, so none must be awaited.
    if (stream.destroyed) {
      setImmediate(() => {
        const e = stream.errored;
        settle(
          e
            ? new ScaleAgentError('UNAVAILABLE', `API server answer cut short: ${e.message}`, { cause: e })
            : unfinished(),
        );
      });
    }
  });
}

/** A status from a watch ERROR event. */
export function watchStatusError(object: { code?: number; reason?: string; message?: string }): KubeApiError {
  return new KubeApiError(object.code ?? 500, object.reason ?? '', object.message ?? 'watch error');
}
