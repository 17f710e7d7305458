/**
 * The prefix of every object name. The chart's names are `<fullname>-<component>`; synthesized values set its
 * `fullnameOverride` to this, so helm, kustomize and manifests name objects alike whatever the release is called.
 */
export const NAME_PREFIX = 'scale-agent';

/** Every name the compiler gives an object or a path, in one place. Base names match kustomize/base/. */
export const NAMES = {
  pluginServer: `${NAME_PREFIX}-plugin-server`,
  pluginServerConfig: `${NAME_PREFIX}-plugin-server-config`,
  pluginServerTls: `${NAME_PREFIX}-plugin-server-tls`,
  pluginServerGrpc: `${NAME_PREFIX}-plugin-server-grpc`,
  agent: `${NAME_PREFIX}-agent`,
  agentConfig: `${NAME_PREFIX}-agent-config`,
  agentTls: `${NAME_PREFIX}-agent-tls`,
  /** The Role (and binding) letting an agent get and watch the kubeconfig Secrets it reads live. */
  agentSecrets: `${NAME_PREFIX}-agent-secrets`,
  /** Generated Secrets of the plugin-server (when the topology names none of its own). */
  dynamicAccountsKey: `${NAME_PREFIX}-plugin-server-dynamic-accounts`,
  peerSecret: `${NAME_PREFIX}-plugin-server-peer`,
} as const;

/** The keys of the generated Secrets above. */
export const GENERATED_SECRET_KEYS = { dynamicAccountsKey: 'encryption-key', peerSecret: 'secret' } as const;

export const PATHS = {
  configDir: '/etc/scale-agent/config',
  configFile: '/etc/scale-agent/config/config.yaml',
  tlsDir: '/etc/scale-agent/tls',
  kubeconfigDir: '/etc/scale-agent/kubeconfigs',
  /** A directory mount of the REST tokens Secret, so a rotated Secret reaches the running server. */
  restTokensDir: '/etc/scale-agent/rest-tokens',
  /** One directory mount per Secret holding artifact credentials (`<dir>/<secret>/<key>`), rotated in place too. */
  artifactSecretsDir: '/etc/scale-agent/artifact-secrets',
  /** Directory mounts (rotated in place) of the dynamic accounts' encryption key and of the replicas' peer secret. */
  dynamicAccountsKeyDir: '/etc/scale-agent/dynamic-accounts',
  peerSecretDir: '/etc/scale-agent/peer',
} as const;

/** The container's gRPC port; the topology's port is the Service's. */
export const CONTAINER_GRPC_PORT = 9091;
export const CONTAINER_HTTP_PORT = 7002;
export const AGENT_ADMIN_PORT = 8082;
/** The agent's health-only listener (config `health`), what the kubelet's HTTP probes call. */
export const AGENT_HEALTH_PORT = 8081;
/** The env variable the plugin-server reads its SQL store's URL from (config storage.env), per store type. */
export const STORAGE_URL_ENV = { mysql: 'SCALE_AGENT_MYSQL_URL', postgres: 'SCALE_AGENT_POSTGRES_URL' } as const;
/** What a Secret holding each store's URL starts with (named in the install's requirements). */
export const STORAGE_URL_SCHEME = { mysql: 'mysql://', postgres: 'postgres://' } as const;

export const placeNames = {
  pluginServer: 'plugin-server',
  agent: (group: string) => `agent-${group}`,
  account: (account: string) => `account-${account}`,
};

export const agentSuffix = (group: string): string => `-${group}`;
/** ServiceAccount of a kubeconfig-based account in its target cluster (the kubeconfig authenticates as it). */
export const accountServiceAccount = (account: string): string => `scale-agent-${account}`;
export const accountRoleName = (account: string): string => `scale-agent-account-${account}`;

/** The identity an agent group's client certificate carries; the plugin-server authorizes accounts by it. */
export const agentIdentityUri = (topology: string, group: string): string =>
  `spiffe://scale-agent/${topology}/agent/${group}`;

export function grpcServiceDnsNames(namespace: string): string[] {
  const s = NAMES.pluginServerGrpc;
  return [s, `${s}.${namespace}`, `${s}.${namespace}.svc`, `${s}.${namespace}.svc.cluster.local`];
}
