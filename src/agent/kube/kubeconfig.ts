import { readFileSync } from 'node:fs';
import type https from 'node:https';
import type { SecureClientSessionOptions } from 'node:http2';
import { dirname, isAbsolute, resolve } from 'node:path';
import { parse } from 'yaml';
import { ScaleAgentError } from '../../shared/errors.js';

/** Everything needed to reach one API server: where, which TLS, and the Authorization header per request. */
export interface ClusterAccess {
  server: URL;
  ca?: Buffer;
  cert?: Buffer;
  key?: Buffer;
  servername?: string;
  rejectUnauthorized: boolean;
  /** kubeconfig `proxy-url`: an http:// proxy the connection is tunnelled through with CONNECT. */
  proxyUrl?: string;
  /** The context's namespace: where operations put manifests that name none. */
  namespace?: string;
  /** The header value (or none), computed per request: token files and exec credentials rotate. */
  authorization(): Promise<string | undefined>;
}

/** The TLS settings of a connection to the API server, as the HTTP/2 pool takes them. */
export function tlsOptionsOf(access: ClusterAccess): SecureClientSessionOptions {
  return {
    ca: access.ca,
    cert: access.cert,
    key: access.key,
    servername: access.servername,
    rejectUnauthorized: access.rejectUnauthorized,
  };
}

export interface KubeconfigSource {
  kubeconfigFile?: string;
  /**
   * The kubeconfig itself (a dynamic account's `kubeconfigContents`), used from memory: nothing is written to disk,
   * so an agent whose pod has a read-only root filesystem and no writable /tmp can serve it.
   */
  kubeconfigContents?: string;
  serviceAccount?: boolean;
  context?: string;
}

/** A kubeconfig's text, what to call it in errors, and the directory its relative file paths start from. */
interface KubeconfigText {
  text: string;
  where: string;
  /** Undefined for contents from memory, which may name files only by absolute path. */
  base?: string;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** Rotated tokens (kubelet rotates projected ones about hourly) are re-read at most this often. */
const TOKEN_REFRESH_MS = 60_000;

interface NamedCluster {
  name: string;
  cluster?: {
    server?: string;
    'certificate-authority'?: string;
    'certificate-authority-data'?: string;
    'insecure-skip-tls-verify'?: boolean;
    'tls-server-name'?: string;
    'proxy-url'?: string;
  };
}
interface NamedUser {
  name: string;
  user?: {
    token?: string;
    tokenFile?: string;
    'client-certificate'?: string;
    'client-certificate-data'?: string;
    'client-key'?: string;
    'client-key-data'?: string;
    username?: string;
    password?: string;
    exec?: unknown;
    'auth-provider'?: unknown;
  };
}
interface Kubeconfig {
  clusters?: NamedCluster[];
  users?: NamedUser[];
  contexts?: { name: string; context?: { cluster?: string; user?: string; namespace?: string } }[];
  'current-context'?: string;
}

/**
 * Reads a kubeconfig (or the pod's ServiceAccount) into ClusterAccess. Static tokens, token files, client
 * certificates and basic auth are handled here; exec plugins and auth-providers are delegated to
 * @kubernetes/client-node's KubeConfig, imported only then — the library's generated API costs ~85 MB of RSS per
 * process, which an agent serving a hundred accounts with plain credentials should not pay.
 */
export async function loadClusterAccess(source: KubeconfigSource): Promise<ClusterAccess> {
  if (source.serviceAccount) return inCluster();
  const { text, where, base } = kubeconfigText(source);
  let kc: Kubeconfig;
  try {
    kc = (parse(text, { maxAliasCount: 100 }) ?? {}) as Kubeconfig;
  } catch (e) {
    throw new ScaleAgentError('INVALID_INPUT', `${where} is not valid YAML: ${(e as Error).message}`, { cause: e });
  }
  if (typeof kc !== 'object' || Array.isArray(kc))
    throw new ScaleAgentError('INVALID_INPUT', `${where} is not a mapping`);
  const contextName = source.context ?? kc['current-context'];
  const context = kc.contexts?.find((c) => c.name === contextName)?.context;
  if (!context) throw new ScaleAgentError('INVALID_INPUT', `${where}: context '${contextName ?? ''}' not found`);
  const cluster = kc.clusters?.find((c) => c.name === context.cluster)?.cluster;
  if (!cluster?.server)
    throw new ScaleAgentError('INVALID_INPUT', `${where}: cluster '${context.cluster ?? ''}' has no server`);
  const user = kc.users?.find((u) => u.name === context.user)?.user ?? {};
  if (user.exec || user['auth-provider']) return viaClientNode(source, where);

  const path = (p: string): string => {
    if (isAbsolute(p)) return p;
    if (base === undefined) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        `${where} names the relative path ${p}: only absolute paths can be resolved`,
      );
    }
    return resolve(base, p);
  };
  const bytes = (data: string | undefined, f: string | undefined): Buffer | undefined =>
    data ? Buffer.from(data, 'base64') : f ? readFileSync(path(f)) : undefined;
  let authorization: () => Promise<string | undefined> = () => Promise.resolve(undefined);
  if (user.token) {
    const header = `Bearer ${user.token}`;
    authorization = () => Promise.resolve(header);
  } else if (user.tokenFile) {
    authorization = rotatingToken(path(user.tokenFile));
  } else if (user.username !== undefined) {
    const header = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
    authorization = () => Promise.resolve(header);
  }
  return {
    server: new URL(cluster.server),
    ca: bytes(cluster['certificate-authority-data'], cluster['certificate-authority']),
    cert: bytes(user['client-certificate-data'], user['client-certificate']),
    key: bytes(user['client-key-data'], user['client-key']),
    servername: cluster['tls-server-name'],
    rejectUnauthorized: !cluster['insecure-skip-tls-verify'],
    proxyUrl: cluster['proxy-url'],
    namespace: context.namespace,
    authorization,
  };
}

function kubeconfigText(source: KubeconfigSource): KubeconfigText {
  if (source.kubeconfigContents !== undefined) return { text: source.kubeconfigContents, where: 'kubeconfig contents' };
  const file = source.kubeconfigFile;
  if (!file) throw new ScaleAgentError('INVALID_INPUT', 'needs kubeconfigFile, kubeconfigContents or serviceAccount');
  try {
    return { text: readFileSync(file, 'utf8'), where: `kubeconfig ${file}`, base: dirname(resolve(file)) };
  } catch (e) {
    throw new ScaleAgentError('FILE_UNREADABLE', `cannot read kubeconfig ${file}: ${(e as Error).message}`, {
      cause: e,
    });
  }
}

function inCluster(): ClusterAccess {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
  if (!host) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      'serviceAccount: true but KUBERNETES_SERVICE_HOST is not set (not in a pod?)',
    );
  }
  return {
    server: new URL(`https://${host.includes(':') ? `[${host}]` : host}:${port}`),
    ca: readFileSync(`${SA_DIR}/ca.crt`),
    rejectUnauthorized: true,
    namespace: readOptional(`${SA_DIR}/namespace`),
    authorization: rotatingToken(`${SA_DIR}/token`),
  };
}

function readOptional(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}

function rotatingToken(file: string): () => Promise<string | undefined> {
  let value: string | undefined;
  let readAt = 0;
  return () => {
    if (!value || Date.now() - readAt > TOKEN_REFRESH_MS) {
      value = `Bearer ${readFileSync(file, 'utf8').trim()}`;
      readAt = Date.now();
    }
    return Promise.resolve(value);
  };
}

async function viaClientNode(source: KubeconfigSource, where: string): Promise<ClusterAccess> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  try {
    // From a file, the library resolves the kubeconfig's relative paths against the file's directory.
    if (source.kubeconfigContents !== undefined) kc.loadFromString(source.kubeconfigContents);
    else if (source.kubeconfigFile) kc.loadFromFile(source.kubeconfigFile);
    if (source.context) kc.setCurrentContext(source.context);
  } catch (e) {
    throw new ScaleAgentError('INVALID_INPUT', `cannot load ${where}: ${(e as Error).message}`, { cause: e });
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new ScaleAgentError('INVALID_INPUT', 'kubeconfig has no current cluster');
  const tls: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(tls);
  const asBuffer = (v: unknown): Buffer | undefined =>
    v === undefined || v === null ? undefined : Buffer.isBuffer(v) ? v : Buffer.from(String(v));
  return {
    server: new URL(cluster.server),
    ca: asBuffer(tls.ca),
    cert: asBuffer(tls.cert),
    key: asBuffer(tls.key),
    servername: tls.servername ?? cluster.tlsServerName ?? undefined,
    rejectUnauthorized: tls.rejectUnauthorized ?? !cluster.skipTLSVerify,
    proxyUrl: cluster.proxyUrl,
    namespace: kc.getContextObject(kc.getCurrentContext())?.namespace,
    authorization: async () => {
      const opts: https.RequestOptions = { headers: {} };
      await kc.applyToHTTPSOptions(opts);
      const h = (opts.headers as Record<string, string | undefined>).Authorization;
      if (h) return h;
      return opts.auth ? `Basic ${Buffer.from(opts.auth).toString('base64')}` : undefined;
    },
  };
}
