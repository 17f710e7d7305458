import { isDeepStrictEqual } from 'node:util';
import { schemaDefaults } from '../shared/yaml-config.js';
import { agentKindNames } from './rbac-rules.js';
import {
  GENERATED_SECRET_KEYS,
  AGENT_ADMIN_PORT,
  AGENT_HEALTH_PORT,
  CONTAINER_GRPC_PORT,
  CONTAINER_HTTP_PORT,
  STORAGE_URL_ENV,
  NAMES,
  PATHS,
  agentIdentityUri,
} from './names.js';
import { ACCOUNT_OPTIONS, type Agent, type SecretSource, type Topology } from './topology.js';

/** Where an agent group dials: the Service's cluster DNS name in mode service, else the external address. */
export function serverAddress(t: Topology, agent: Agent): { host: string; port: number } {
  const e = t.pluginServer.exposure;
  if (agent.mode !== 'service') {
    if (e.type === 'External') {
      const i = e.address.lastIndexOf(':');
      return { host: e.address.slice(0, i), port: Number(e.address.slice(i + 1)) };
    }
    if (e.type === 'LoadBalancer' && e.address) return { host: e.address, port: t.pluginServer.grpcPort };
  }
  return { host: `${NAMES.pluginServerGrpc}.${t.pluginServer.namespace}.svc`, port: t.pluginServer.grpcPort };
}

/** Mount path of each distinct mounted kubeconfig Secret, in name order (volume `kubeconfig-<n>`). */
export function kubeconfigMounts(agent: Agent): { secret: string; volume: string; mountPath: string }[] {
  const secrets = [
    ...new Set(agent.accounts.flatMap((a) => (a.kubeconfigSecret?.watch === false ? [a.kubeconfigSecret.name] : []))),
  ];
  return secrets.sort().map((secret, n) => ({
    secret,
    volume: `kubeconfig-${n}`,
    mountPath: `${PATHS.kubeconfigDir}/${secret}`,
  }));
}

/**
 * The kubeconfig Secrets the agent reads live (`kubeconfigSecret.watch`), in name order: its ServiceAccount may get
 * and watch exactly these, in its own namespace.
 */
export function watchedKubeconfigSecrets(agent: Agent): string[] {
  return [
    ...new Set(agent.accounts.flatMap((a) => (a.kubeconfigSecret?.watch === true ? [a.kubeconfigSecret.name] : []))),
  ].sort();
}

/** The secret reference (docs/secrets.md) by which the agent reads a key of a Secret in its own namespace. */
export const k8sSecretReference = (secret: string, key: string): string => `encryptedFile:k8s!n:${secret}!k:${key}`;

/** Mount path of each distinct Secret holding artifact credentials, in name order (volume `artifact-secret-<n>`). */
export function artifactSecretMounts(t: Topology): { secret: string; volume: string; mountPath: string }[] {
  const secrets = [
    ...new Set((t.artifacts?.http ?? []).flatMap((h) => (h.credential ? [h.credential.secret.name] : []))),
  ];
  return secrets.sort().map((secret, n) => ({
    secret,
    volume: `artifact-secret-${n}`,
    mountPath: `${PATHS.artifactSecretsDir}/${secret}`,
  }));
}

/** A Secret of one key the plugin-server mounts as a directory; `generated` when synth writes it into the output. */
export interface KeySecretMount {
  /** Which secret it is (also its key in the chart's values and in GeneratedSecrets). */
  role: 'dynamicAccountsKey' | 'peerSecret';
  secret: string;
  key: string;
  volume: string;
  mountPath: string;
  generated: boolean;
}

/**
 * The plugin-server's own secrets, each the user's Secret or a generated one (docs/install.md, "Generated secrets"):
 * the dynamic accounts' encryption key always (so kubeconfigContents work in every install), the peer secret with
 * shared (SQL) storage, the only one with peers.
 */
export function pluginServerKeySecrets(t: Topology): {
  dynamicAccountsKey: KeySecretMount;
  peerSecret?: KeySecretMount;
} {
  const mount = (
    role: KeySecretMount['role'],
    s: SecretSource,
    generated: string,
    key: string,
    volume: string,
    mountPath: string,
  ): KeySecretMount =>
    s.source === 'secret'
      ? { role, secret: s.secret.name, key: s.secret.key, volume, mountPath, generated: false }
      : { role, secret: generated, key, volume, mountPath, generated: true };
  const ps = t.pluginServer;
  return {
    dynamicAccountsKey: mount(
      'dynamicAccountsKey',
      ps.dynamicAccountsKey,
      NAMES.dynamicAccountsKey,
      GENERATED_SECRET_KEYS.dynamicAccountsKey,
      'dynamic-accounts-key',
      PATHS.dynamicAccountsKeyDir,
    ),
    ...(ps.peerSecret
      ? {
          peerSecret: mount(
            'peerSecret',
            ps.peerSecret,
            NAMES.peerSecret,
            GENERATED_SECRET_KEYS.peerSecret,
            'peer-secret',
            PATHS.peerSecretDir,
          ),
        }
      : {}),
  };
}

/** spinnaker.artifacts of the plugin-server's config, each credential the file of its mounted Secret key. */
function artifactsConfig(t: Topology): Record<string, unknown> | undefined {
  const a = t.artifacts;
  if (!a) return undefined;
  const mounts = new Map(artifactSecretMounts(t).map((m) => [m.secret, m.mountPath]));
  return {
    http: a.http.map((h) => ({
      name: h.name,
      allowedHosts: h.allowedHosts,
      ...(h.credential
        ? {
            [h.credential.kind === 'token' ? 'tokenFile' : 'usernamePasswordFile']:
              `${mounts.get(h.credential.secret.name)}/${h.credential.secret.key}`,
          }
        : {}),
    })),
    ...(a.timeoutMs !== undefined ? { timeoutMs: a.timeoutMs } : {}),
    ...(a.maxBytes !== undefined ? { maxBytes: a.maxBytes } : {}),
  };
}

/** The agent's config file (schemas/agent-config.schema.json). */
export function agentConfig(t: Topology, agent: Agent): Record<string, unknown> {
  const { host, port } = serverAddress(t, agent);
  const mode = t.pluginServer.tls.mode;
  const mounts = new Map(kubeconfigMounts(agent).map((m) => [m.secret, m.mountPath]));
  const server: Record<string, unknown> = { address: `${host}:${port}`, insecure: mode === 'insecure' };
  if (mode !== 'insecure') {
    server.tls = {
      caFile: `${PATHS.tlsDir}/ca.crt`,
      ...(mode === 'mtls' ? { certFile: `${PATHS.tlsDir}/tls.crt`, keyFile: `${PATHS.tlsDir}/tls.key` } : {}),
      serverName: host,
    };
  }
  return {
    server,
    ...(agent.zone !== undefined ? { zone: agent.zone } : {}),
    // Only when set, so configs of topologies without it stay as they were.
    ...(agent.loadSharing ? { loadSharing: true } : {}),
    admin: { host: '127.0.0.1', port: AGENT_ADMIN_PORT },
    // Reachable by the kubelet and by Prometheus: /healthz, /readyz and /metrics (observable by default, as the
    // plugin-server's /metrics on its REST port); the account and watch listings stay on the loopback admin endpoint.
    health: { host: '0.0.0.0', port: AGENT_HEALTH_PORT, metrics: true },
    kubernetes: {
      accounts: agent.accounts.map((a) => {
        const out: Record<string, unknown> = { name: a.name };
        if (a.serviceAccount) out.serviceAccount = true;
        else if (a.kubeconfigSecret?.watch) {
          out.kubeconfigFile = k8sSecretReference(a.kubeconfigSecret.name, a.kubeconfigSecret.key);
        } else if (a.kubeconfigSecret) {
          out.kubeconfigFile = `${mounts.get(a.kubeconfigSecret.name)}/${a.kubeconfigSecret.key}`;
        }
        if (a.context !== undefined) out.context = a.context;
        if (a.namespaces.length > 0) {
          out.namespaces = a.namespaces;
          // Its RBAC is a set of Roles, so cluster-scoped kinds would only be refused.
          out.onlyNamespacedResources = true;
        }
        if (a.omitNamespaces.length > 0) out.omitNamespaces = a.omitNamespaces;
        out.kinds = agentKindNames(a);
        const perms: Record<string, string[]> = {};
        if (a.permissions.READ.length > 0) perms.READ = a.permissions.READ;
        if (a.permissions.WRITE.length > 0) perms.WRITE = a.permissions.WRITE;
        if (Object.keys(perms).length > 0) out.permissions = perms;
        // Every other shared option (onlySpinnakerManaged, ...) only when it differs from its default, so configs of
        // topologies without them stay as they were, and an option added to the schema reaches the agent as it is.
        const defaults = schemaDefaults(ACCOUNT_OPTIONS);
        for (const [key, value] of Object.entries(defaults)) {
          const set = (a as unknown as Record<string, unknown>)[key];
          if (!DECIDED_HERE.has(key) && !isDeepStrictEqual(set, value)) out[key] = set;
        }
        return out;
      }),
    },
  };
}

/** Account options the agent config gets from the decisions above rather than as written (omitKinds: in `kinds`). */
const DECIDED_HERE = new Set([
  'serviceAccount',
  'context',
  'namespaces',
  'omitNamespaces',
  'kinds',
  'omitKinds',
  'permissions',
]);

/**
 * The plugin-server's `spinnaker` section: in front mode, the existing Clouddriver it passes on to what is not about
 * agent accounts; with Fiat, where it checks each user's READ (either mode: Orca's reads carry the user too);
 * without an upstream, the artifacts it fetches itself.
 */
function spinnakerConfig(t: Topology): { spinnaker?: Record<string, unknown> } {
  const s = t.spinnaker;
  const artifacts = artifactsConfig(t);
  const section = {
    ...(s?.mode === 'front' ? { upstream: { baseUrl: s.upstreamUrl } } : {}),
    ...(artifacts ? { artifacts } : {}),
    ...(t.fiatUrl !== undefined ? { fiat: { baseUrl: t.fiatUrl } } : {}),
  };
  return Object.keys(section).length > 0 ? { spinnaker: section } : {};
}

/** The plugin-server's config file (schemas/plugin-server-config.schema.json), including the identity policy. */
export function pluginServerConfig(t: Topology): Record<string, unknown> {
  const mode = t.pluginServer.tls.mode;
  const grpc: Record<string, unknown> = { host: '0.0.0.0', port: CONTAINER_GRPC_PORT };
  if (mode !== 'insecure') {
    grpc.tls = {
      certFile: `${PATHS.tlsDir}/tls.crt`,
      keyFile: `${PATHS.tlsDir}/tls.key`,
      ...(mode === 'mtls' ? { clientCaFile: `${PATHS.tlsDir}/ca.crt`, requireClientCert: true } : {}),
    };
  }
  const kind = t.pluginServer.storage.type;
  const storage = kind === 'memory' ? { type: 'memory' } : { type: kind, env: STORAGE_URL_ENV[kind] };
  const keys = pluginServerKeySecrets(t);
  return {
    grpc,
    http: {
      host: '0.0.0.0',
      port: CONTAINER_HTTP_PORT,
      ...(keys.peerSecret ? { peerAuth: { secretFile: `${keys.peerSecret.mountPath}/${keys.peerSecret.key}` } } : {}),
      ...(t.pluginServer.restAuth.enabled
        ? {
            auth: {
              tokensFile: `${PATHS.restTokensDir}/${t.pluginServer.restAuth.tokensSecret.key}`,
              trustedNetworks: t.pluginServer.restAuth.trustedNetworks,
            },
          }
        : {}),
    },
    storage,
    dynamicAccounts: {
      encryptionKeyFile: `${keys.dynamicAccountsKey.mountPath}/${keys.dynamicAccountsKey.key}`,
    },
    ...spinnakerConfig(t),
    ...(mode === 'mtls'
      ? {
          authorization: {
            identities: t.agents.map((a) => ({
              match: { uri: agentIdentityUri(t.name, a.name) },
              accounts: a.accounts.map((acc) => acc.name),
              // Dynamic accounts (POST /armory/accounts/dynamic) name a zoneId; the group may serve its zone's.
              ...(a.zone !== undefined ? { zones: [a.zone] } : {}),
            })),
          },
        }
      : {}),
  };
}
