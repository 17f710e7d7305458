import { ScaleAgentError } from '../../shared/errors.js';
import type { Permission, TargetCluster } from './target-cluster.js';

/** How the account's token is minted: a TokenRequest that expires, or the ServiceAccount's long-lived token Secret. */
export type TokenMode = { kind: 'request'; seconds: number } | { kind: 'long-lived' };

/** What was minted, without the token itself (it goes into the files only). */
export type TokenInfo =
  | { kind: 'TokenRequest'; expiresAt: string; requestedSeconds: number; grantedSeconds: number }
  | { kind: 'Secret'; secret: string };

export type MintedToken = TokenInfo & { token: string };

/** The token controller (kube-controller-manager) fills a new token Secret within a second or two. */
const TOKEN_SECRET_WAIT_MS = 60_000;

const path = {
  tokenRequest: (ns: string, sa: string) =>
    `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/${encodeURIComponent(sa)}/token`,
  secret: (ns: string, name: string) =>
    `/api/v1/namespaces/${encodeURIComponent(ns)}/secrets/${encodeURIComponent(name)}`,
};

export function tokenPermissions(
  mode: TokenMode,
  sa: { name: string; namespace: string },
  tokenSecret: string,
): Permission[] {
  return mode.kind === 'request'
    ? [{ verb: 'create', group: '', resource: 'serviceaccounts', subresource: 'token', ...sa }]
    : [{ verb: 'get', group: '', resource: 'secrets', namespace: sa.namespace, name: tokenSecret }];
}

export async function mintToken(
  cluster: TargetCluster,
  mode: TokenMode,
  sa: { name: string; namespace: string },
  tokenSecret: string,
): Promise<MintedToken> {
  if (mode.kind === 'long-lived') {
    return { kind: 'Secret', token: await waitForSecretToken(cluster, sa.namespace, tokenSecret), secret: tokenSecret };
  }
  const r = await cluster.request<{ status?: { token?: string; expirationTimestamp?: string } }>(
    'POST',
    path.tokenRequest(sa.namespace, sa.name),
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: mode.seconds } },
    { verb: 'create', resource: 'serviceaccounts/token', namespace: sa.namespace, name: sa.name },
  );
  const token = r.status?.token;
  const expiresAt = r.status?.expirationTimestamp;
  if (!token || !expiresAt) {
    throw new ScaleAgentError(
      'INTERNAL',
      `TokenRequest for ServiceAccount ${sa.namespace}/${sa.name} returned no token`,
    );
  }
  // The API server may shorten it (--service-account-max-token-expiration); say what was granted.
  const grantedSeconds = Math.round((Date.parse(expiresAt) - Date.now()) / 1000);
  return { kind: 'TokenRequest', token, expiresAt, requestedSeconds: mode.seconds, grantedSeconds };
}

async function waitForSecretToken(cluster: TargetCluster, namespace: string, name: string): Promise<string> {
  const token = await cluster.waitFor(
    path.secret(namespace, name),
    { verb: 'get', resource: 'secrets', namespace, name },
    (s: { data?: Record<string, string> }) => s.data?.token,
    TOKEN_SECRET_WAIT_MS,
  );
  if (token === undefined) {
    throw new ScaleAgentError(
      'TIMEOUT',
      `Secret ${namespace}/${name} got no token within ${TOKEN_SECRET_WAIT_MS / 1000} s: the token controller ` +
        '(kube-controller-manager) fills it; is it running? Without it, use --duration (TokenRequest) instead',
    );
  }
  return Buffer.from(token, 'base64').toString('utf8');
}
