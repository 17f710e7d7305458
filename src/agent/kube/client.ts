import { createHash, X509Certificate } from 'node:crypto';
import type { ClientHttp2Stream } from 'node:http2';
import { ScaleAgentError } from '../../shared/errors.js';
import { versionInfo } from '../../shared/version.js';
import { sharedHttp2Pool, type Http2Pool } from './http2-pool.js';
import { loadClusterAccess, type ClusterAccess } from './kubeconfig.js';

/** An error status from the API server (HTTP status or a watch ERROR event's Status). */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

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
  serviceAccount?: boolean;
  context?: string;
}

export interface KubeResponse {
  status: number;
  stream: ClientHttp2Stream;
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

  private constructor(private readonly access: ClusterAccess) {
    this.server = access.server;
    this.caPem = access.ca;
    if (this.server.protocol !== 'https:') {
      throw new ScaleAgentError('INVALID_INPUT', `API server ${this.server.href}: only https is supported`);
    }
    ({ pool: this.pool, release: this.releasePool } = sharedHttp2Pool({
      origin: this.server.origin,
      tls: {
        ca: access.ca,
        cert: access.cert,
        key: access.key,
        servername: access.servername,
        rejectUnauthorized: access.rejectUnauthorized,
      },
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

  /** Opens a GET; non-2xx answers are read and thrown as KubeApiError. */
  async get(path: string, options: { accept?: string; signal?: AbortSignal } = {}): Promise<KubeResponse> {
    const authorization = await this.access.authorization();
    const headers: Record<string, string> = {
      ':method': 'GET',
      ':path': path,
      accept: options.accept ?? 'application/json',
      'user-agent': this.userAgent,
    };
    if (authorization) headers.authorization = authorization;
    const { stream, headers: response } = await this.pool.request(headers, options.signal);
    const status = Number(response[':status'] ?? 0);
    if (status >= 200 && status < 300) return { status, stream };
    const body = await readAll(stream, 64 * 1024);
    throw statusError(status, body, path);
  }

  async getJson<T>(path: string, options: { accept?: string; signal?: AbortSignal } = {}): Promise<T> {
    const { stream } = await this.get(path, options);
    const body = await readAll(stream, 512 * 1024 * 1024);
    return JSON.parse(body.toString('utf8')) as T;
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

function statusError(status: number, body: Buffer, path: string): KubeApiError {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { reason?: string; message?: string; code?: number };
    return new KubeApiError(status, parsed.reason ?? '', parsed.message ?? `HTTP ${status} for ${path}`);
  } catch {
    return new KubeApiError(status, '', `HTTP ${status} for ${path}: ${body.subarray(0, 200).toString('utf8')}`);
  }
}

async function readAll(stream: ClientHttp2Stream, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    const b = chunk as Buffer;
    size += b.length;
    if (size > limit) {
      stream.close();
      throw new Error(`response larger than ${limit} bytes`);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks);
}

/** A status from a watch ERROR event. */
export function watchStatusError(object: { code?: number; reason?: string; message?: string }): KubeApiError {
  return new KubeApiError(object.code ?? 500, object.reason ?? '', object.message ?? 'watch error');
}
