/**
 * The topology as written (`TopologyInput`, what the schema accepts) and as the compiler uses it (`Topology`,
 * every default applied once, here, so later stages never guess).
 */
import type {
  AccountInput,
  AgentInput,
  ExposureInput,
  Pod,
  SecretKeyRef,
  TopologyInput,
} from '../shared/config-types/topology.js';
import type { AccountOptions as AppliedAccountOptions } from '../shared/config-types/agent-config.js';
import { schemaDefaults } from '../shared/yaml-config.js';

/** The options every account declaration shares (schemas/account-options.schema.json). */
export const ACCOUNT_OPTIONS = 'account-options.schema.json#/$defs/options';

export const MODES = ['service', 'infrastructure', 'agent'] as const;
export type Mode = (typeof MODES)[number];

export const TLS_MODES = ['mtls', 'tls', 'insecure'] as const;
export type TlsMode = (typeof TLS_MODES)[number];

export type Access = 'read-write' | 'read-only';
export type Provider = 'aws' | 'gcp' | 'azure' | 'generic';

export type { AccountInput, AgentInput, ExposureInput, SecretKeyRef, TopologyInput };

/** Scheduling and metadata of a component's pods (schema $defs/pod). */
export type PodSettings = Pod;
export type PolicyRuleInput = NonNullable<NonNullable<AccountInput['rbac']>['extraRules']>[number];
export type CertificatesInput = NonNullable<NonNullable<TopologyInput['pluginServer']['tls']>['certificates']>;
export type ArtifactsInput = NonNullable<NonNullable<TopologyInput['spinnaker']>['artifacts']>;

/** One http/file artifact account; its credential, if any, is a key of a Secret the plugin-server mounts. */
export interface HttpArtifactAccount {
  name: string;
  allowedHosts: string[];
  credential?: { kind: 'usernamePassword' | 'token'; secret: SecretKeyRef };
}

/** What the plugin-server fetches itself (standalone or orca-only: no upstream of its own). */
export interface Artifacts {
  http: HttpArtifactAccount[];
  timeoutMs?: number;
  maxBytes?: number;
}

/** docs/spinnaker.md: the plugin-server in front of Clouddriver, or Orca alone routing agent accounts to it. */
export type SpinnakerMode = 'front' | 'orca-only';

/**
 * One account as the compiler uses it: the shared account options with their schema defaults (the form the agent
 * config holds them in, schemas/account-options.schema.json), and what only a topology says.
 */
export type Account = Omit<AppliedAccountOptions, 'permissions'> & {
  name: string;
  /** JSON path of the account in the topology, for messages. */
  path: string;
  kubeconfigSecret?: SecretKeyRef;
  access: Access;
  permissions: { READ: string[]; WRITE: string[] };
  rbac: { create: boolean; serviceAccountNamespace: string; extraRules: PolicyRuleInput[] };
};

export interface Agent {
  name: string;
  path: string;
  mode: Mode;
  namespace: string;
  replicas: number;
  image: string;
  zone?: string;
  pod: PodSettings;
  accounts: Account[];
}

export type Exposure =
  | { type: 'ClusterIP' }
  | {
      type: 'LoadBalancer';
      provider: Provider;
      internal: boolean;
      address?: string;
      loadBalancerSourceRanges: string[];
      annotations: Record<string, string>;
    }
  | { type: 'External'; address: string };

export type Certificates =
  | { source: 'generate'; validityDays: number }
  | { source: 'cert-manager'; issuerRef: { name: string; kind: 'Issuer' | 'ClusterIssuer'; group: string } };

/** REST API authentication: on unless the topology turns it off. */
export type RestAuth = { enabled: false } | { enabled: true; tokensSecret: SecretKeyRef; trustedNetworks: string[] };

export const DEFAULT_REST_TOKENS_SECRET: SecretKeyRef = { name: 'scale-agent-rest-tokens', key: 'tokens' };

export interface Topology {
  name: string;
  pluginServer: {
    namespace: string;
    replicas: number;
    image: string;
    storage: { type: 'memory' } | { type: 'mysql'; secretRef: SecretKeyRef };
    grpcPort: number;
    exposure: Exposure;
    tls: { mode: TlsMode; certificates: Certificates };
    restAuth: RestAuth;
    pod: PodSettings;
  };
  /** Absent: Spinnaker has no Clouddriver of its own next to the plugin-server. */
  spinnaker?: { mode: SpinnakerMode; upstreamUrl: string; accountPattern?: string };
  /** Fiat, with or without a Clouddriver (spinnaker.fiat). */
  fiatUrl?: string;
  /** spinnaker.artifacts; absent when the topology declares none. */
  artifacts?: Artifacts;
  /** NetworkPolicies for every workload (on by default); REST callers' namespaces besides the plugin-server's. */
  networkPolicies: { enabled: boolean; spinnakerNamespaces: string[] };
  agents: Agent[];
}

export const DEFAULT_IMAGE_REPOSITORY = 'ghcr.io/scale-agent/scale-agent';
export const DEFAULT_GRPC_PORT = 9091;
export const DEFAULT_HTTP_PORT = 7002;
export const DEFAULT_REMOTE_NAMESPACE = 'scale-agent';

/** Applies every default; `input` must already have passed the schema. */
export function normalizeTopology(input: TopologyInput, version: string): Topology {
  const ps = input.pluginServer;
  const image = ps.image ?? `${DEFAULT_IMAGE_REPOSITORY}:${version}`;
  const namespace = ps.namespace ?? DEFAULT_REMOTE_NAMESPACE;
  const exposureIn = ps.grpc?.exposure ?? { type: 'ClusterIP' };
  const exposure: Exposure =
    exposureIn.type === 'LoadBalancer'
      ? {
          type: 'LoadBalancer',
          provider: exposureIn.provider ?? 'generic',
          internal: exposureIn.internal ?? true,
          ...(exposureIn.address !== undefined ? { address: exposureIn.address } : {}),
          loadBalancerSourceRanges: exposureIn.loadBalancerSourceRanges ?? [],
          annotations: exposureIn.annotations ?? {},
        }
      : exposureIn;
  const certsIn = ps.tls?.certificates ?? { source: 'generate' };
  const certificates: Certificates =
    certsIn.source === 'generate'
      ? { source: 'generate', validityDays: certsIn.validityDays ?? 825 }
      : {
          source: 'cert-manager',
          issuerRef: {
            name: certsIn.issuerRef.name,
            kind: certsIn.issuerRef.kind ?? 'ClusterIssuer',
            group: certsIn.issuerRef.group ?? 'cert-manager.io',
          },
        };
  return {
    name: input.metadata.name,
    pluginServer: {
      namespace,
      replicas: ps.replicas ?? 1,
      image,
      storage: ps.storage ?? { type: 'memory' },
      grpcPort: ps.grpc?.port ?? DEFAULT_GRPC_PORT,
      exposure,
      tls: { mode: ps.tls?.mode ?? 'mtls', certificates },
      pod: ps.pod ?? {},
      restAuth:
        ps.rest?.auth?.enabled === false
          ? { enabled: false }
          : {
              enabled: true,
              tokensSecret: ps.rest?.auth?.tokensSecret ?? DEFAULT_REST_TOKENS_SECRET,
              trustedNetworks: ps.rest?.auth?.trustedNetworks ?? [],
            },
    },
    ...(input.spinnaker?.upstream
      ? {
          spinnaker: {
            mode: input.spinnaker.mode ?? 'front',
            upstreamUrl: input.spinnaker.upstream.baseUrl,
            ...(input.spinnaker.accountPattern !== undefined ? { accountPattern: input.spinnaker.accountPattern } : {}),
          },
        }
      : {}),
    ...(input.spinnaker?.fiat !== undefined ? { fiatUrl: input.spinnaker.fiat.baseUrl } : {}),
    ...(input.spinnaker?.artifacts !== undefined ? { artifacts: normalizeArtifacts(input.spinnaker.artifacts) } : {}),
    networkPolicies: {
      enabled: input.networkPolicies?.enabled ?? true,
      spinnakerNamespaces: input.networkPolicies?.spinnakerNamespaces ?? [],
    },
    agents: input.agents.map((a, i) => ({
      name: a.name,
      path: `/agents/${i}`,
      mode: a.mode,
      namespace: a.namespace ?? (a.mode === 'service' ? namespace : DEFAULT_REMOTE_NAMESPACE),
      replicas: a.replicas ?? 1,
      image: a.image ?? image,
      ...(a.zone !== undefined ? { zone: a.zone } : {}),
      pod: a.pod ?? {},
      accounts: a.accounts.map((acc, j) => normalizeAccount(acc, `/agents/${i}/accounts/${j}`)),
    })),
  };
}

function normalizeAccount(input: AccountInput, path: string): Account {
  const { name, kubeconfigSecret, access, permissions, rbac, ...options } = input;
  return {
    // Every shared option with its schema default, so an option added there needs nothing here.
    ...(schemaDefaults(ACCOUNT_OPTIONS) as Omit<AppliedAccountOptions, 'permissions'>),
    ...options,
    name,
    path,
    ...(kubeconfigSecret ? { kubeconfigSecret } : {}),
    access: access ?? 'read-write',
    permissions: { READ: permissions?.READ ?? [], WRITE: permissions?.WRITE ?? [] },
    rbac: {
      create: rbac?.create ?? true,
      serviceAccountNamespace: rbac?.serviceAccountNamespace ?? DEFAULT_REMOTE_NAMESPACE,
      extraRules: rbac?.extraRules ?? [],
    },
  };
}

function normalizeArtifacts(a: ArtifactsInput): Artifacts {
  return {
    http: (a.http ?? []).map((h) => ({
      name: h.name,
      allowedHosts: h.allowedHosts,
      ...(h.usernamePasswordSecret
        ? { credential: { kind: 'usernamePassword' as const, secret: h.usernamePasswordSecret } }
        : h.tokenSecret
          ? { credential: { kind: 'token' as const, secret: h.tokenSecret } }
          : {}),
    })),
    ...(a.timeoutMs !== undefined ? { timeoutMs: a.timeoutMs } : {}),
    ...(a.maxBytes !== undefined ? { maxBytes: a.maxBytes } : {}),
  };
}
