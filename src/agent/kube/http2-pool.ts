import { createHash } from 'node:crypto';
import http from 'node:http';
import { isIP, type Socket } from 'node:net';
import tls from 'node:tls';
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from 'node:http2';
import type { SecureClientSessionOptions } from 'node:http2';

/**
 * HTTP/2 sessions to one API server, shared by all of an account's watches the way client-go shares one
 * connection: a watch is a stream, so a hundred watches cost one TLS connection, and pausing a watch applies
 * HTTP/2 flow control to that stream only. A session that stops answering PINGs is destroyed, so a silently
 * dead connection (NAT timeout, API server gone) fails its watches instead of hanging them forever.
 */
export interface Http2PoolOptions {
  origin: string;
  tls: SecureClientSessionOptions;
  /**
   * kubeconfig `proxy-url`: an HTTP proxy reached with CONNECT, through which the TLS connection to the API server is
   * tunnelled (as client-go does for http/https proxies). The same for watches and operations: both use this pool.
   */
  proxyUrl?: string;
  /** Probe a session with PING when it received nothing for this long. client-go: 30 s. */
  readIdleMs?: number;
  /** A PING unanswered for this long kills the session. client-go: 15 s. */
  pingTimeoutMs?: number;
  /**
   * A request without response headers after this long is cancelled and fails (retried with backoff by its
   * caller). The API server answers every request, watches included, at once; without a bound a lost request
   * would hang its watch forever, holding an initial-sync slot.
   */
  responseTimeoutMs?: number;
}

interface PooledSession {
  session: ClientHttp2Session;
  active: number;
  /** When the connection was last seen to have read something (its socket's bytesRead moved, or a response came). */
  lastRead: number;
  /** The socket's bytesRead at that moment. */
  bytesRead: number;
  pinging: boolean;
}

/** Streams per session when the server does not say (Go's http2 server default is 250; stay below it). */
const DEFAULT_STREAM_LIMIT = 100;
const STREAM_WINDOW = 1024 * 1024;
const CONNECT_TIMEOUT_MS = 10_000;
const CONNECTION_WINDOW = 4 * 1024 * 1024;

/** The request never left: no connection could be had for it. Retrying it cannot apply it twice. */
export class NotSentError extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'NotSentError';
  }
}

export class Http2Pool {
  private sessions: PooledSession[] = [];
  private readonly readIdleMs: number;
  private readonly pingTimeoutMs: number;
  private readonly responseTimeoutMs: number;
  private readonly healthTimer: NodeJS.Timeout;
  private closed = false;
  /** A connect in progress: concurrent requests at startup share it instead of each opening a connection. */
  private connecting: Promise<PooledSession> | undefined;

  constructor(private readonly options: Http2PoolOptions) {
    this.readIdleMs = options.readIdleMs ?? 30_000;
    this.pingTimeoutMs = options.pingTimeoutMs ?? 15_000;
    this.responseTimeoutMs = options.responseTimeoutMs ?? 60_000;
    this.healthTimer = setInterval(() => this.checkHealth(), Math.min(this.readIdleMs, 10_000));
    this.healthTimer.unref();
  }

  /**
   * Opens a stream; resolves with the response headers once they arrive. `onResponse` runs as they arrive, before
   * any await: the place to start reading a body that may already be complete.
   */
  async request(
    headers: http2.OutgoingHttpHeaders,
    signal?: AbortSignal,
    body?: Buffer,
    onResponse?: (stream: ClientHttp2Stream) => void,
  ): Promise<{ stream: ClientHttp2Stream; headers: IncomingHttpHeaders }> {
    if (this.closed) throw new Error('connection pool closed');
    // holds one of its stream slots for us
    const pooled = await this.pick().catch((e: unknown) => {
      throw new NotSentError(e);
    });
    // Open streams keep the process alive; an idle pool does not.
    pooled.session.ref();
    const stream = pooled.session.request(headers, { endStream: body === undefined, signal });
    if (body !== undefined) stream.end(body);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      pooled.active -= 1;
      if (pooled.active === 0 && !pooled.session.destroyed) pooled.session.unref();
    };
    stream.once('close', release);
    // The stream must hold its body until its reader attaches. In flowing mode (a 'data' listener, as this pool once
    // attached to note reads) a body that arrives in the same socket read as its headers is emitted before the
    // reader attaches, and lost: answers with no body, or with their start missing, seen when 100 accounts start at
    // once. Node's HTTP/2 client also starts a stream flowing by itself unless it was paused. So: paused explicitly,
    // read by its reader (a whole answer: readAnswer's listeners; a watch: streamChunks, listeners too), and the health check
    // counts the connection's bytes instead. A whole answer is read from `onResponse`, its listeners attached before
    // any of its data can be emitted.
    stream.pause();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stream.off('error', onError);
        stream.off('close', onClose);
        stream.close(http2.constants.NGHTTP2_CANCEL);
        reject(new Error(`no response from ${this.options.origin} within ${this.responseTimeoutMs} ms`));
      }, this.responseTimeoutMs);
      timer.unref();
      const onError = (err: Error): void => {
        clearTimeout(timer);
        release();
        stream.off('close', onClose);
        reject(err);
      };
      // A stream can close without an 'error' and without ever answering: RST_STREAM(NO_ERROR), or its session
      // destroyed without an error (GOAWAY, connection closed). Waiting for 'response' would then hang forever.
      const onClose = (): void => {
        clearTimeout(timer);
        stream.off('error', onError);
        reject(new Error(`HTTP/2 stream closed before a response (rstCode ${stream.rstCode ?? 'none'})`));
      };
      stream.once('error', onError);
      stream.once('close', onClose);
      stream.once('response', (responseHeaders) => {
        clearTimeout(timer);
        stream.off('error', onError);
        stream.off('close', onClose);
        pooled.lastRead = Date.now();
        onResponse?.(stream);
        resolve({ stream, headers: responseHeaders });
      });
    });
  }

  close(): void {
    this.closed = true;
    clearInterval(this.healthTimer);
    for (const s of this.sessions) s.session.destroy();
    this.sessions = [];
  }

  get isClosed(): boolean {
    return this.closed;
  }

  get sessionCount(): number {
    return this.sessions.length;
  }

  /**
   * A session with a free stream slot, the slot already taken. Reserving here, in the same tick as the check, matters:
   * concurrent first requests all wait for the same new connection, and without a reservation every one of them would
   * use it, past the server's MAX_CONCURRENT_STREAMS. The streams over the limit then queue in nghttp2, and since
   * watches never end, they wait forever (seen with 100 accounts on one API server: 7 initial watches never sent).
   */
  private async pick(): Promise<PooledSession> {
    for (;;) {
      for (const s of this.sessions) {
        const limit = Math.min(
          s.session.remoteSettings.maxConcurrentStreams ?? DEFAULT_STREAM_LIMIT,
          DEFAULT_STREAM_LIMIT,
        );
        if (!s.session.closed && !s.session.destroyed && s.active < limit) {
          s.active += 1;
          return s;
        }
      }
      this.connecting ??= this.connect().finally(() => {
        this.connecting = undefined;
      });
      await this.connecting;
      if (this.closed) throw new Error('connection pool closed');
    }
  }

  private async connect(): Promise<PooledSession> {
    const tunnel = this.options.proxyUrl ? await connectTunnel(this.options.proxyUrl, this.options.origin) : undefined;
    return new Promise((resolve, reject) => {
      // Windows as client-go's transport sizes them, so a list over a slow link is not throttled to 64 KiB per
      // round trip; still bounded, so a paused watch holds at most STREAM_WINDOW unread bytes.
      const session = http2.connect(this.options.origin, {
        ...this.options.tls,
        settings: { initialWindowSize: STREAM_WINDOW },
        ...(tunnel ? { createConnection: () => tlsOver(tunnel, this.options.origin, this.options.tls) } : {}),
      });
      const pooled: PooledSession = { session, active: 0, lastRead: Date.now(), bytesRead: 0, pinging: false };
      const drop = (): void => {
        this.sessions = this.sessions.filter((s) => s !== pooled);
      };
      session.once('close', drop);
      session.once('goaway', drop);
      session.on('error', () => {
        drop();
        session.destroy();
      });
      // A black-holed API server would otherwise take the kernel's SYN retries (about two minutes) to fail.
      const timer = setTimeout(
        () => session.destroy(new Error(`connect to ${this.options.origin} timed out`)),
        CONNECT_TIMEOUT_MS,
      );
      timer.unref();
      session.once('close', () => clearTimeout(timer));
      // Ready once connected AND the server's first SETTINGS arrived: its MAX_CONCURRENT_STREAMS is the limit pick()
      // fills up to, and before that frame remoteSettings only holds the protocol's defaults.
      let connected = false;
      let settings = false;
      const ready = (): void => {
        if (!connected || !settings) return;
        clearTimeout(timer);
        session.off('error', reject);
        session.setLocalWindowSize(CONNECTION_WINDOW);
        // An idle pool must not keep the process alive on shutdown.
        session.unref();
        this.sessions.push(pooled);
        resolve(pooled);
      };
      session.once('remoteSettings', () => {
        settings = true;
        ready();
      });
      session.once('connect', () => {
        connected = true;
        ready();
      });
      session.once('error', reject);
    });
  }

  private checkHealth(): void {
    const now = Date.now();
    for (const s of this.sessions) {
      // A session destroyed a moment ago stays listed until its 'close' event, and ping() on it throws: from this
      // timer, that would be an uncaught exception (seen on a loaded machine, right after a PING timed out).
      if (s.session.destroyed || s.session.closed) continue;
      const bytesRead = s.session.socket.bytesRead;
      if (bytesRead !== s.bytesRead) {
        s.bytesRead = bytesRead;
        s.lastRead = now;
      }
      if (s.pinging || s.active === 0 || now - s.lastRead < this.readIdleMs) continue;
      s.pinging = true;
      const timer = setTimeout(
        () => s.session.destroy(new Error('API server did not answer an HTTP/2 PING')),
        this.pingTimeoutMs,
      );
      timer.unref();
      const ok = s.session.ping((err) => {
        clearTimeout(timer);
        s.pinging = false;
        if (err) s.session.destroy(err);
        else s.lastRead = Date.now();
      });
      if (!ok) {
        clearTimeout(timer);
        s.pinging = false;
      }
    }
  }
}

/** Opens a CONNECT tunnel to `origin` through an HTTP proxy; resolves with the raw socket once it says 200. */
function connectTunnel(proxyUrl: string, origin: string): Promise<Socket> {
  const proxy = new URL(proxyUrl);
  if (proxy.protocol !== 'http:') {
    return Promise.reject(new Error(`proxy-url ${proxy.protocol}// proxies are not supported (use an http:// proxy)`));
  }
  const target = new URL(origin);
  const authority = `${target.hostname}:${target.port || '443'}`;
  const headers: Record<string, string> = { host: authority };
  if (proxy.username) {
    const credentials = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
    headers['proxy-authorization'] = `Basic ${Buffer.from(credentials).toString('base64')}`;
  }
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: proxy.hostname,
      port: proxy.port || 80,
      method: 'CONNECT',
      path: authority,
      headers,
      timeout: CONNECT_TIMEOUT_MS,
    });
    req.once('connect', (res, socket) => {
      if (res.statusCode === 200) return resolve(socket);
      socket.destroy();
      reject(new Error(`proxy ${proxy.host} refused CONNECT ${authority}: HTTP ${res.statusCode ?? 0}`));
    });
    req.once('timeout', () => req.destroy(new Error(`proxy ${proxy.host} did not answer CONNECT in time`)));
    req.once('error', (e) => reject(new Error(`proxy ${proxy.host}: ${e.message}`)));
    req.end();
  });
}

/** TLS to the API server over an established tunnel, with the same CA, client certificate and server name. */
function tlsOver(socket: Socket, origin: string, options: SecureClientSessionOptions): tls.TLSSocket {
  const host = new URL(origin).hostname.replace(/^\[|\]$/g, '');
  const servername = options.servername ?? (isIP(host) ? undefined : host);
  return tls.connect({
    socket,
    ca: options.ca,
    cert: options.cert,
    key: options.key,
    rejectUnauthorized: options.rejectUnauthorized,
    ALPNProtocols: ['h2'],
    ...(servername ? { servername } : {}),
  });
}

const shared = new Map<string, { pool: Http2Pool; users: number }>();

/**
 * The pool for an API server, shared by every account that reaches it with the same TLS settings (CA, client
 * certificate, server name): credentials that differ only in the bearer token (a header per request) share the
 * connections, as client-go shares a transport per TLS config. A hundred accounts on one cluster then cost one
 * or two TLS connections and one connection-level flow-control window, not a hundred. Release when done; the
 * last release closes the pool.
 */
export function sharedHttp2Pool(options: Http2PoolOptions): { pool: Http2Pool; release: () => void } {
  const t = options.tls;
  const hash = createHash('sha256').update(options.origin);
  for (const part of [t.ca, t.cert, t.key, t.servername, String(t.rejectUnauthorized), options.proxyUrl]) {
    hash.update('\0');
    for (const x of Array.isArray(part) ? part : [part]) if (x !== undefined) hash.update(x as string | Buffer);
  }
  const key = hash.digest('hex');
  let entry = shared.get(key);
  if (!entry || entry.pool.isClosed) {
    entry = { pool: new Http2Pool(options), users: 0 };
    shared.set(key, entry);
  }
  entry.users += 1;
  const e = entry;
  let released = false;
  return {
    pool: e.pool,
    release: () => {
      if (released) return;
      released = true;
      e.users -= 1;
      if (e.users > 0) return;
      e.pool.close();
      if (shared.get(key) === e) shared.delete(key);
    },
  };
}
