import type { PemPair } from '../shared/certs/index.js';
import {
  CONTAINER_GRPC_PORT,
  NAMES,
  STORAGE_URL_SCHEME,
  accountRoleName,
  accountServiceAccount,
  agentIdentityUri,
  agentSuffix,
  grpcServiceDnsNames,
  placeNames,
} from './names.js';
import { selectorLabels } from '../../cdk8s/labels.js';
import type { NetworkPeer } from '../../cdk8s/network-policy.js';
import { scopedToInstance, withDefaultSpread } from './pod-scheduling.js';
import { accountRules, type AccountRules } from './rbac-rules.js';
import {
  agentConfig,
  artifactSecretMounts,
  kubeconfigMounts,
  pluginServerConfig,
  watchedKubeconfigSecrets,
  pluginServerKeySecrets,
  serverAddress,
  type KeySecretMount,
} from './runtime-config.js';
import type { GeneratedSecrets } from './generated-secrets.js';
import type { Account, Agent, Certificates, Exposure, PodSettings, Topology } from './topology.js';

/**
 * The compiler's model: every decision about one place to apply something (names, TLS source and SANs,
 * certificate lifetime, mounts, ports, RBAC, apply order and why) is made here, once. Manifests, Kustomize
 * overlays, Helm values and summary.json are projections of these objects and decide nothing themselves.
 */

/** The two workloads; each has a Kustomize base (kustomize/base/<component>). */
export type BaseComponent = 'plugin-server' | 'agent';

/** Generated TLS material: the CA certificate (its key never enters the output), server and client pairs. */
export interface TlsMaterial {
  caCert: string;
  server: PemPair;
  clients: Record<string, PemPair>;
}

/**
 * Namespaces the compiler owns admit only pods that meet the restricted Pod Security Standard, which its workloads
 * do (non-root, no privilege escalation, all capabilities dropped, RuntimeDefault seccomp); `warn` makes kubectl
 * say so when something else in the namespace would not.
 */
export const POD_SECURITY_LABELS: Record<string, string> = {
  'pod-security.kubernetes.io/enforce': 'restricted',
  'pod-security.kubernetes.io/warn': 'restricted',
};

/** Certificates cert-manager issues live 90 days and renew at its default, two thirds of that. */
export const CERTIFICATE_DURATION_HOURS = 2160;

/** Where a workload's TLS Secret comes from. `secretName` is the base name (before any name suffix). */
export type TlsDecision =
  | { source: 'none' }
  | { source: 'secret'; secretName: string; caCert: string; pair?: PemPair }
  | {
      source: 'cert-manager';
      secretName: string;
      /** cert-manager's secretName is no Kustomize name reference, so it is written in its final form. */
      finalSecretName: string;
      certificateName: string;
      issuerRef: Extract<Certificates, { source: 'cert-manager' }>['issuerRef'];
      usage: 'server' | 'client';
      commonName: string;
      dnsNames: string[];
      uris: string[];
      durationHours: number;
    };

/**
 * Who may reach a workload and whom it may reach (docs/security.md). An empty peer list means any source or
 * destination, as in NetworkPolicy itself. The plugin-server's policy governs ingress only (its egress goes to
 * MySQL, an upstream Clouddriver and Fiat, wherever the site runs them); an agent's governs both.
 */
export type NetworkPolicyModel =
  | { component: 'plugin-server'; grpcFrom: NetworkPeer[]; httpFrom: NetworkPeer[] }
  | { component: 'agent'; metricsFrom: NetworkPeer[]; egressPorts: number[]; egressTo: NetworkPeer[] };

/** The API servers agents dial: 443 behind a load balancer or the in-cluster Service, 6443 where they listen. */
export const API_SERVER_PORTS = [443, 6443];

/** A Secret the pod mounts read-only as a directory. */
export interface SecretMount {
  secret: string;
  volume: string;
  mountPath: string;
}
export type KubeconfigMount = SecretMount;

/** A Secret of one key the pod mounts; with `value` synth generated it and the place writes the Secret. */
export type KeySecret = KeySecretMount & { value?: string };

/** One Deployment over its kustomize base, with everything a place changes about it. */
export interface WorkloadModel {
  component: BaseComponent;
  /** Base name of the Deployment (and ServiceAccount). */
  name: string;
  configName: string;
  namespace: string;
  /** Kustomize's nameSuffix; Helm's fullname follows the same names. */
  nameSuffix: string;
  /** Labels added to every object and selector (the instance label). */
  instanceLabels: Record<string, string>;
  replicas: number;
  image: string;
  /** The runtime's config file (schemas/agent-config.schema.json or plugin-server-config.schema.json). */
  config: Record<string, unknown>;
  tls: TlsDecision;
  kubeconfigMounts: KubeconfigMount[];
  /** The SQL store's URL Secret (plugin-server with storage mysql or postgres), passed as env STORAGE_URL_ENV. */
  storageUrl?: { type: 'mysql' | 'postgres'; name: string; key: string };
  /** The REST tokens Secret the plugin-server mounts (REST authentication on). */
  restTokensSecret?: string;
  /** The Secrets holding artifact credentials (plugin-server with spinnaker.artifacts), config's *File paths. */
  artifactSecretMounts?: SecretMount[];
  /** The plugin-server's own secrets (dynamic accounts' key, peer secret), each the user's or generated. */
  keySecrets?: KeySecret[];
  /** With more than one replica, a PodDisruptionBudget lets drains take one pod at a time. */
  maxUnavailable?: number;
  /** Scheduling and metadata the topology gives the pods (and their ServiceAccount). */
  pod: PodSettings;
  /** Mode `agent` reads its own cluster, and watched kubeconfig Secrets are read, with the pod's ServiceAccount token. */
  automountServiceAccountToken: boolean;
  /** Absent when the topology turns NetworkPolicies off. */
  networkPolicy?: NetworkPolicyModel;
}

export interface GrpcServiceModel {
  name: string;
  port: number;
  loadBalancer?: Extract<Exposure, { type: 'LoadBalancer' }>;
}

/** Role(s) and binding(s) of one account, granted to a ServiceAccount. */
export interface RbacModel {
  account: Account;
  roleName: string;
  subject: { name: string; namespace: string };
  /** The place creates the ServiceAccount (with a token Secret) rather than binding an existing one. */
  createServiceAccount: boolean;
  namespaces: string[];
  rules: AccountRules;
}

/**
 * What an agent's own ServiceAccount may read in its namespace for the kubeconfigs it reads live (watched
 * `kubeconfigSecret`s): get and watch on exactly these Secrets by name. The API server authorizes the agent's watch
 * (`fieldSelector=metadata.name=NAME`) against resourceNames, so no `list` and no other Secret.
 */
export interface SecretReaderModel {
  roleName: string;
  subject: { name: string; namespace: string };
  secrets: string[];
}

export type PlaceKind = 'plugin-server' | 'agent' | 'account-rbac';

/** One place to apply something: a cluster (and namespace) with its own overlay, values file and manifests. */
export interface Place {
  name: string;
  kind: PlaceKind;
  order: number;
  /** Why it is applied at that point (printed in summary.json). */
  orderReason: string;
  cluster: string;
  namespace: string;
  mode?: Agent['mode'];
  /** Helm release name for this place. */
  release: string;
  /** A namespace the place owns and creates (remote agents, account RBAC); shared namespaces are never emitted. */
  ownNamespace?: string;
  workload?: WorkloadModel;
  grpcService?: GrpcServiceModel;
  rbac?: RbacModel;
  /** Agent places whose accounts read kubeconfig Secrets live. */
  secretReader?: SecretReaderModel;
  /** The agent group (agent places) or the account's group (account places). */
  agent?: Agent;
  /** What must exist before applying (user-provided Secrets). */
  requires: string[];
}

const ORDER = {
  account: { order: 5, reason: 'RBAC and ServiceAccount first: the kubeconfigs agents use are minted from them' },
  pluginServer: { order: 10, reason: 'the plugin-server before any agent, so agents connect at once' },
  service: { order: 20, reason: 'agents in mode service run beside the plugin-server' },
  infrastructure: { order: 30, reason: 'agent groups in mode infrastructure reach their clusters by kubeconfig' },
  agent: { order: 40, reason: 'agents in mode agent last, one per target cluster' },
} as const;

/** Pure: builds every place of a topology, sorted in apply order. */
export function buildPlaces(t: Topology, tls: TlsMaterial | undefined, secrets: GeneratedSecrets = {}): Place[] {
  const places = [pluginServerPlace(t, tls, secrets), ...t.agents.map((a) => agentPlace(t, a, tls))];
  for (const agent of t.agents) {
    for (const acc of agent.accounts) {
      if (!acc.serviceAccount && acc.rbac.create) places.push(accountPlace(agent, acc));
    }
  }
  return places.sort((a, b) => a.order - b.order || (a.name < b.name ? -1 : 1));
}

function tlsDecision(
  t: Topology,
  secretName: string,
  finalSecretName: string,
  certificateName: string,
  pair: PemPair | undefined,
  tls: TlsMaterial | undefined,
  names: { usage: 'server' | 'client'; commonName: string; dnsNames?: string[]; uris?: string[] },
): TlsDecision {
  const certs = t.pluginServer.tls.certificates;
  if (t.pluginServer.tls.mode === 'insecure') return { source: 'none' };
  if (certs.source === 'cert-manager') {
    return {
      source: 'cert-manager',
      secretName,
      finalSecretName,
      certificateName,
      issuerRef: certs.issuerRef,
      usage: names.usage,
      commonName: names.commonName,
      dnsNames: names.dnsNames ?? [],
      uris: names.uris ?? [],
      durationHours: CERTIFICATE_DURATION_HOURS,
    };
  }
  // A client pair only in mtls: with plain tls the agent needs just the CA to verify the server.
  const withPair = names.usage === 'server' || t.pluginServer.tls.mode === 'mtls';
  return { source: 'secret', secretName, caCert: tls?.caCert ?? '', ...(withPair && pair ? { pair } : {}) };
}

/** Extra SANs: the address agents outside the cluster dial. */
function externalSans(e: Exposure): string[] {
  if (e.type === 'LoadBalancer' && e.address) return [e.address];
  if (e.type === 'External') return [e.address.slice(0, e.address.lastIndexOf(':'))];
  return [];
}

/** The plugin-server's key Secrets, the generated ones with the value synth generated for them. */
function keySecrets(t: Topology, secrets: GeneratedSecrets): KeySecret[] {
  const k = pluginServerKeySecrets(t);
  return [k.dynamicAccountsKey, ...(k.peerSecret ? [k.peerSecret] : [])].map((m: KeySecretMount): KeySecret =>
    m.generated ? { ...m, value: secrets[m.role] ?? '' } : m,
  );
}

const KEY_SECRET_NEEDS: Record<KeySecret['role'], string> = {
  dynamicAccountsKey: "dynamic accounts' encryption key, 32 bytes as base64 or 64 hex characters",
  peerSecret: "replicas' peer secret, one word of at least 32 characters",
};

function pluginServerPlace(t: Topology, tls: TlsMaterial | undefined, secrets: GeneratedSecrets): Place {
  const ps = t.pluginServer;
  const e = ps.exposure;
  const artifactMounts = artifactSecretMounts(t);
  const keys = keySecrets(t, secrets);
  return {
    name: placeNames.pluginServer,
    kind: 'plugin-server',
    order: ORDER.pluginServer.order,
    orderReason: ORDER.pluginServer.reason,
    cluster: "the plugin-server's cluster",
    namespace: ps.namespace,
    release: `scale-agent-${t.name}`,
    workload: {
      component: 'plugin-server',
      name: NAMES.pluginServer,
      configName: NAMES.pluginServerConfig,
      namespace: ps.namespace,
      nameSuffix: '',
      instanceLabels: { 'app.kubernetes.io/instance': t.name },
      replicas: ps.replicas,
      ...disruptionBudget(ps.replicas),
      ...(ps.restAuth.enabled ? { restTokensSecret: ps.restAuth.tokensSecret.name } : {}),
      image: ps.image,
      config: pluginServerConfig(t),
      tls: tlsDecision(t, NAMES.pluginServerTls, NAMES.pluginServerTls, NAMES.pluginServer, tls?.server, tls, {
        usage: 'server',
        commonName: NAMES.pluginServerGrpc,
        dnsNames: [...grpcServiceDnsNames(ps.namespace), ...externalSans(e)],
      }),
      kubeconfigMounts: [],
      ...(artifactMounts.length > 0 ? { artifactSecretMounts: artifactMounts } : {}),
      keySecrets: keys,
      pod: scopedToInstance(withDefaultSpread(ps.pod, ps.replicas, 'plugin-server'), {
        'app.kubernetes.io/instance': t.name,
      }),
      ...(ps.storage.type !== 'memory'
        ? { storageUrl: { type: ps.storage.type, name: ps.storage.secretRef.name, key: ps.storage.secretRef.key } }
        : {}),
      automountServiceAccountToken: false,
      ...(t.networkPolicies.enabled ? { networkPolicy: pluginServerPolicy(t) } : {}),
    },
    grpcService: {
      name: NAMES.pluginServerGrpc,
      port: ps.grpcPort,
      ...(e.type === 'LoadBalancer' ? { loadBalancer: e } : {}),
    },
    requires: [
      ...(ps.storage.type !== 'memory'
        ? [
            `Secret ${ps.storage.secretRef.name} (key ${ps.storage.secretRef.key}: ${STORAGE_URL_SCHEME[ps.storage.type]} URL) in namespace ${ps.namespace}`,
          ]
        : []),
      ...(ps.restAuth.enabled
        ? [
            `Secret ${ps.restAuth.tokensSecret.name} (key ${ps.restAuth.tokensSecret.key}: REST tokens, lines ` +
              `'<token> <name> read|admin') in namespace ${ps.namespace}`,
          ]
        : []),
      ...keys
        .filter((k) => !k.generated)
        .map((k) => `Secret ${k.secret} (key ${k.key}: ${KEY_SECRET_NEEDS[k.role]}) in namespace ${ps.namespace}`),
      ...(t.artifacts?.http ?? []).flatMap((h) =>
        h.credential
          ? [
              `Secret ${h.credential.secret.name} (key ${h.credential.secret.key}: ` +
                `${h.credential.kind === 'token' ? 'bearer token' : "'username:password'"} of artifact account ` +
                `${h.name}) in namespace ${ps.namespace}`,
            ]
          : [],
      ),
    ],
  };
}

function agentPlace(t: Topology, agent: Agent, tls: TlsMaterial | undefined): Place {
  const suffix = agentSuffix(agent.name);
  const order = ORDER[agent.mode];
  const acc = agent.accounts[0] as Account;
  const secrets = new Map<string, { keys: string[]; accounts: string[] }>();
  const watched = watchedKubeconfigSecrets(agent);
  for (const a of agent.accounts) {
    if (!a.kubeconfigSecret) continue;
    const e = secrets.get(a.kubeconfigSecret.name) ?? { keys: [], accounts: [] };
    e.keys.push(a.kubeconfigSecret.key);
    e.accounts.push(a.name);
    secrets.set(a.kubeconfigSecret.name, e);
  }
  return {
    name: placeNames.agent(agent.name),
    kind: 'agent',
    order: order.order,
    orderReason: order.reason,
    cluster:
      agent.mode === 'service'
        ? "the plugin-server's cluster"
        : agent.mode === 'agent'
          ? `the cluster of account ${acc.name}`
          : `the cluster that runs agent group ${agent.name}`,
    namespace: agent.namespace,
    mode: agent.mode,
    release: `scale-agent-${placeNames.agent(agent.name)}`,
    ...(agent.mode !== 'service' ? { ownNamespace: agent.namespace } : {}),
    agent,
    workload: {
      component: 'agent',
      name: NAMES.agent,
      configName: NAMES.agentConfig,
      namespace: agent.namespace,
      nameSuffix: suffix,
      instanceLabels: { 'app.kubernetes.io/instance': agent.name },
      replicas: agent.replicas,
      ...disruptionBudget(agent.replicas),
      image: agent.image,
      config: agentConfig(t, agent),
      tls: tlsDecision(t, NAMES.agentTls, `${NAMES.agentTls}${suffix}`, NAMES.agent, tls?.clients[agent.name], tls, {
        usage: 'client',
        commonName: `${t.name}/${agent.name}`,
        uris: [agentIdentityUri(t.name, agent.name)],
      }),
      kubeconfigMounts: kubeconfigMounts(agent),
      // Standby replicas of a group on the node or in the zone of the active one would fail with it.
      pod: scopedToInstance(withDefaultSpread(agent.pod, agent.replicas, 'agent'), {
        'app.kubernetes.io/instance': agent.name,
      }),
      automountServiceAccountToken: agent.mode === 'agent' || watched.length > 0,
      ...(t.networkPolicies.enabled ? { networkPolicy: agentPolicy(t, agent) } : {}),
    },
    ...(agent.mode === 'agent' && acc.rbac.create
      ? {
          rbac: {
            account: acc,
            roleName: accountRoleName(acc.name),
            subject: { name: `${NAMES.agent}${suffix}`, namespace: agent.namespace },
            createServiceAccount: false,
            namespaces: acc.namespaces,
            rules: accountRules(acc),
          },
        }
      : {}),
    ...(watched.length > 0
      ? {
          secretReader: {
            roleName: `${NAMES.agentSecrets}${suffix}`,
            subject: { name: `${NAMES.agent}${suffix}`, namespace: agent.namespace },
            secrets: watched,
          },
        }
      : {}),
    requires: [...secrets.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(
        ([name, { keys, accounts }]) =>
          `Secret ${name} (keys ${[...new Set(keys)].sort().join(', ')}: kubeconfigs${watched.includes(name) ? ', read live' : ''}) ` +
          `in namespace ${agent.namespace}; ` +
          `\`scale-agent kubeconfig TOPOLOGY --account ACCOUNT\` mints each (accounts ${accounts.sort().join(', ')})`,
      ),
  };
}

function accountPlace(agent: Agent, acc: Account): Place {
  const ns = acc.rbac.serviceAccountNamespace;
  return {
    name: placeNames.account(acc.name),
    kind: 'account-rbac',
    order: ORDER.account.order,
    orderReason: ORDER.account.reason,
    cluster: `the cluster of account ${acc.name} (agent group ${agent.name})`,
    namespace: ns,
    mode: agent.mode,
    release: `scale-agent-${placeNames.account(acc.name)}`,
    ownNamespace: ns,
    agent,
    rbac: {
      account: acc,
      roleName: accountRoleName(acc.name),
      subject: { name: accountServiceAccount(acc.name), namespace: ns },
      createServiceAccount: true,
      namespaces: acc.namespaces,
      rules: accountRules(acc),
    },
    requires: [],
  };
}

/**
 * REST (and /metrics) from the plugin-server's namespace — Spinnaker's services, Prometheus, the other replicas,
 * `helm test` — and from the topology's Spinnaker namespaces. gRPC from agent pods in any namespace when agents
 * dial the ClusterIP Service; through a load balancer or an external address the source is a node or a NAT
 * address no selector matches, so then from anywhere (TLS and agent identities guard it).
 */
function pluginServerPolicy(t: Topology): NetworkPolicyModel {
  // Expressions, not matchLabels: Kustomize's `labels` with includeSelectors adds the overlay's instance label to
  // every matchLabels of a NetworkPolicy's peers too, and agents carry their group's instance, not the topology's.
  const agentPods = Object.entries(selectorLabels('agent')).map(([key, value]) => ({
    key,
    operator: 'In',
    values: [value],
  }));
  const inCluster = t.pluginServer.exposure.type === 'ClusterIP';
  return {
    component: 'plugin-server',
    grpcFrom: inCluster ? [{ namespaceSelector: {}, podSelector: { matchExpressions: agentPods } }] : [],
    httpFrom: [
      { podSelector: {} },
      ...t.networkPolicies.spinnakerNamespaces.map((ns) => ({
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      })),
    ],
  };
}

/**
 * In: the health port (/metrics, through the agent's metrics Service) from pods of the agent's namespace and of the
 * topology's Spinnaker namespaces, where Prometheus runs as for the plugin-server's /metrics.
 * Out: DNS, the API servers and the plugin-server, by port: the API servers' addresses are in kubeconfigs minted
 * after synth (and behind Services the policy sees the endpoint's port, so 443 and 6443 both), and the
 * plugin-server's gRPC port is the one the agent dials plus the pods' own (what a ClusterIP Service translates it to).
 */
function agentPolicy(t: Topology, agent: Agent): NetworkPolicyModel {
  const ports = new Set([...API_SERVER_PORTS, serverAddress(t, agent).port, CONTAINER_GRPC_PORT]);
  return {
    component: 'agent',
    metricsFrom: [
      { podSelector: {} },
      ...t.networkPolicies.spinnakerNamespaces.map((ns) => ({
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
      })),
    ],
    egressPorts: [...ports].sort((a, b) => a - b),
    egressTo: [],
  };
}

function disruptionBudget(replicas: number): { maxUnavailable?: number } {
  return replicas > 1 ? { maxUnavailable: 1 } : {};
}
