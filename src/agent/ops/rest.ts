import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { ScaleAgentError } from '../../shared/errors.js';

/**
 * The operations' access to the API server: plain REST over node:https, with TLS material and credentials from
 * @kubernetes/client-node's KubeConfig (tokens, client certs, token files and exec plugins work as in kubectl).
 * Writes need verbs, content types and subresources the generated clients make awkward, and one small client
 * works the same for built-in kinds and for kinds nobody generated a client for.
 */

/** What a request was trying to do, so a failure can say "cannot patch deployments.apps "web" in "shop"". */
export interface RequestIntent {
  verb: string;
  /** "deployments.apps", "configmaps", "deployments.apps/scale". */
  resource: string;
  namespace?: string;
  name?: string;
}

export class KubeOpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly intent: RequestIntent | undefined,
    message: string,
  ) {
    super(message);
    this.name = 'KubeOpError';
  }
}

export const isStatus = (e: unknown, status: number): e is KubeOpError =>
  e instanceof KubeOpError && e.status === status;

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  signal?: AbortSignal;
  intent?: RequestIntent;
}

const MAX_RESPONSE_BYTES = 256 * 1024 * 1024;

export class KubeRest {
  readonly server: URL;

  constructor(private readonly kc: KubeConfig) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new ScaleAgentError('INVALID_INPUT', 'kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
  }

  async request<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const url = new URL(path, this.server);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const opts: https.RequestOptions = { method, headers: {} };
    // Applied per request: token files and exec credentials rotate.
    await this.kc.applyToHTTPSOptions(opts);
    const headers = opts.headers as Record<string, string>;
    headers.accept = options.accept ?? 'application/json';
    headers['user-agent'] = 'scale-agent-ops';
    let payload: Buffer | undefined;
    if (options.body !== undefined) {
      payload = Buffer.from(typeof options.body === 'string' ? options.body : JSON.stringify(options.body));
      headers['content-type'] = options.contentType ?? 'application/json';
      headers['content-length'] = String(payload.length);
    }
    const { status, body } = await send(url, opts, payload, options.signal);
    if (status >= 200 && status < 300) return (body.length ? JSON.parse(body.toString('utf8')) : {}) as T;
    throw errorFrom(status, body, method, url.pathname, options.intent);
  }

  get<T>(path: string, options: Omit<RequestOptions, 'body'> = {}): Promise<T> {
    return this.request<T>('GET', path, options);
  }
}

function send(
  url: URL,
  opts: https.RequestOptions,
  payload: Buffer | undefined,
  signal: AbortSignal | undefined,
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { ...opts, signal }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_RESPONSE_BYTES) {
          req.destroy(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', (e) => {
      reject(
        signal?.aborted
          ? new ScaleAgentError('TIMEOUT', `request to ${url.pathname} aborted: operation deadline reached`, {
              cause: e,
            })
          : new ScaleAgentError('UNAVAILABLE', `API server ${url.host} unreachable: ${e.message}`, { cause: e }),
      );
    });
    req.end(payload);
  });
}

function errorFrom(status: number, body: Buffer, method: string, path: string, intent?: RequestIntent): KubeOpError {
  let reason: string;
  let message: string;
  try {
    const s = JSON.parse(body.toString('utf8')) as { reason?: string; message?: string };
    reason = s.reason ?? '';
    message = s.message ?? '';
  } catch {
    reason = '';
    message = body.subarray(0, 300).toString('utf8');
  }
  if (!message) message = `HTTP ${status} for ${method} ${path}`;
  if (status === 403) {
    const what = intent ? describeIntent(intent) : `${method} ${path}`;
    message = `Forbidden: cannot ${what}: ${message}`;
  }
  return new KubeOpError(status, reason, intent, message);
}

export function describeIntent(i: RequestIntent): string {
  const name = i.name ? ` "${i.name}"` : '';
  const ns = i.namespace ? ` in namespace "${i.namespace}"` : '';
  return `${i.verb} ${i.resource}${name}${ns}`;
}
