import type { ErrorDetail } from '../shared/errors.js';
import type { LoadedYaml } from './load.js';
import type { PodSettings, Topology } from './topology.js';

export type Severity = 'error' | 'warning';

/** A policy rule of `scale-agent check`. Ids are stable; a retired id is never reused. */
export interface PolicyRule {
  id: string;
  name: string;
  severity: Severity;
  summary: string;
  check(t: Topology): { path: string; message: string }[];
}

export interface Violation extends ErrorDetail {
  rule: string;
  name: string;
  severity: Severity;
}

const remoteAgents = (t: Topology) => t.agents.filter((a) => a.mode !== 'service');

const HOSTNAME = 'kubernetes.io/hostname';

/** The plugin-server and each agent group: the workloads the model may give a PodDisruptionBudget. */
function workloads(t: Topology): { what: string; path: string; replicas: number; pod: PodSettings }[] {
  return [
    { what: 'the plugin-server', path: '/pluginServer', replicas: t.pluginServer.replicas, pod: t.pluginServer.pod },
    ...t.agents.map((a) => ({ what: `agent group '${a.name}'`, path: a.path, replicas: a.replicas, pod: a.pod })),
  ];
}

type NodeSelectorTerm = { matchExpressions?: { key: string; operator: string; values?: string[] }[] };

/**
 * Where the pods are held to a single node: a `kubernetes.io/hostname` nodeSelector, or required node affinity whose
 * every term allows one host name. Returns the JSON pointer of that setting.
 */
function pinnedToOneNode(pod: PodSettings, path: string): string | undefined {
  if (pod.nodeSelector?.[HOSTNAME] !== undefined) return `${path}/pod/nodeSelector/kubernetes.io~1hostname`;
  const required = (
    pod.affinity?.nodeAffinity as { requiredDuringSchedulingIgnoredDuringExecution?: unknown } | undefined
  )?.requiredDuringSchedulingIgnoredDuringExecution as { nodeSelectorTerms?: NodeSelectorTerm[] } | undefined;
  const terms = required?.nodeSelectorTerms ?? [];
  const oneHost = (term: NodeSelectorTerm) =>
    (term.matchExpressions ?? []).some((e) => e.key === HOSTNAME && e.operator === 'In' && e.values?.length === 1);
  return terms.length > 0 && terms.every(oneHost) ? `${path}/pod/affinity/nodeAffinity` : undefined;
}

export const POLICY_RULES: readonly PolicyRule[] = [
  {
    id: 'SA001',
    name: 'insecure-remote-transport',
    severity: 'error',
    summary:
      'tls.mode insecure while agents run outside the plugin-server cluster: cluster state and operations would ' +
      'cross networks in plaintext and anyone who reaches the port could register accounts.',
    check: (t) =>
      t.pluginServer.tls.mode === 'insecure'
        ? remoteAgents(t).map((a) => ({
            path: a.path,
            message: `agent group '${a.name}' (mode ${a.mode}) connects in plaintext; use tls.mode mtls`,
          }))
        : [],
  },
  {
    id: 'SA002',
    name: 'remote-agents-without-client-auth',
    severity: 'error',
    summary:
      'tls.mode tls (no client certificates) with remote agents: agents are not authenticated, so any client ' +
      'that reaches the gRPC port can register any account name.',
    check: (t) =>
      t.pluginServer.tls.mode === 'tls' && remoteAgents(t).length > 0
        ? [
            {
              path: '/pluginServer/tls/mode',
              message: 'remote agents need mtls so their identity limits their accounts',
            },
          ]
        : [],
  },
  {
    id: 'SA003',
    name: 'wildcard-rbac',
    severity: 'error',
    summary: "An account's rbac.extraRules grants '*' (verbs, resources or API groups): least privilege is lost.",
    check: (t) =>
      t.agents.flatMap((a) =>
        a.accounts.flatMap((acc) =>
          acc.rbac.extraRules.flatMap((r, i) =>
            [...r.verbs, ...r.resources, ...r.apiGroups].includes('*')
              ? [{ path: `${acc.path}/rbac/extraRules/${i}`, message: `account '${acc.name}' grants a '*' rule` }]
              : [],
          ),
        ),
      ),
  },
  {
    id: 'SA004',
    name: 'read-write-without-write-permissions',
    severity: 'error',
    summary:
      'A read-write account lists no WRITE roles, so every Spinnaker user may deploy through it. Give WRITE roles ' +
      'or make it read-only.',
    check: (t) =>
      t.agents.flatMap((a) =>
        a.accounts
          .filter((acc) => acc.access === 'read-write' && acc.permissions.WRITE.length === 0)
          .map((acc) => ({
            path: acc.path,
            message: `read-write account '${acc.name}' has no permissions.WRITE roles`,
          })),
      ),
  },
  {
    id: 'SA005',
    name: 'no-read-permissions',
    severity: 'warning',
    summary: 'An account lists no READ roles, so every Spinnaker user sees its cluster state.',
    check: (t) =>
      t.agents.flatMap((a) =>
        a.accounts
          .filter((acc) => acc.permissions.READ.length === 0)
          .map((acc) => ({ path: acc.path, message: `account '${acc.name}' has no permissions.READ roles` })),
      ),
  },
  {
    id: 'SA006',
    name: 'public-load-balancer',
    severity: 'warning',
    summary:
      'The gRPC load balancer is internet-facing (internal: false) without loadBalancerSourceRanges. mTLS still ' +
      'guards it, but an internal LB or source ranges shrink what can even try.',
    check: (t) => {
      const e = t.pluginServer.exposure;
      return e.type === 'LoadBalancer' && !e.internal && e.loadBalancerSourceRanges.length === 0
        ? [
            {
              path: '/pluginServer/grpc/exposure/internal',
              message: 'internet-facing gRPC load balancer open to all sources',
            },
          ]
        : [];
    },
  },
  {
    id: 'SA007',
    name: 'omit-namespaces-grants-cluster',
    severity: 'warning',
    summary:
      'omitNamespaces only filters what is cached; Kubernetes RBAC cannot exclude namespaces, so the account still ' +
      'gets a ClusterRole that reaches the omitted ones. List `namespaces` instead when access must stop there.',
    check: (t) =>
      t.agents.flatMap((a) =>
        a.accounts
          .filter((acc) => acc.omitNamespaces.length > 0 && acc.rbac.create)
          .map((acc) => ({
            path: `${acc.path}/omitNamespaces`,
            message: `account '${acc.name}' omits namespaces but its RBAC is cluster-wide`,
          })),
      ),
  },
  {
    id: 'SA008',
    name: 'cluster-wide-secret-access',
    severity: 'warning',
    summary:
      'A cluster-wide read-write account may read and write every Secret in its cluster (needed to deploy them). ' +
      'Limit it to namespaces, or omit the Secret kind, when it does not deploy Secrets.',
    check: (t) =>
      t.agents.flatMap((a) =>
        a.accounts
          .filter(
            (acc) =>
              acc.access === 'read-write' &&
              acc.namespaces.length === 0 &&
              acc.rbac.create &&
              !acc.omitKinds.some((k) => k.toLowerCase() === 'secret') &&
              (acc.kinds.length === 0 || acc.kinds.some((k) => k.toLowerCase() === 'secret')),
          )
          .map((acc) => ({ path: acc.path, message: `account '${acc.name}' can write Secrets in every namespace` })),
      ),
  },
  {
    id: 'SA009',
    name: 'cluster-wide-write',
    severity: 'warning',
    summary:
      'A read-write account without `namespaces` gets a ClusterRole that creates, changes and deletes workloads in ' +
      'every namespace of its cluster, kube-system included. List the namespaces Spinnaker deploys to.',
    check: (t) =>
      t.agents.flatMap((a) =>
        a.accounts
          .filter((acc) => acc.access === 'read-write' && acc.namespaces.length === 0 && acc.rbac.create)
          .map((acc) => ({
            path: acc.path,
            message: `read-write account '${acc.name}' may write in every namespace of its cluster`,
          })),
      ),
  },
  {
    id: 'SA010',
    name: 'internal-load-balancer-without-source-ranges',
    severity: 'warning',
    summary:
      'The internal gRPC load balancer has no loadBalancerSourceRanges, so every address of the private network ' +
      "(peered VPCs, VPNs included) reaches the port. List the agents' egress ranges.",
    check: (t) => {
      const e = t.pluginServer.exposure;
      return e.type === 'LoadBalancer' && e.internal && e.loadBalancerSourceRanges.length === 0
        ? [
            {
              path: '/pluginServer/grpc/exposure',
              message: 'internal gRPC load balancer open to the whole private network',
            },
          ]
        : [];
    },
  },
  {
    id: 'SA011',
    name: 'rest-auth-disabled',
    severity: 'error',
    summary:
      'pluginServer.rest.auth.enabled is false: whoever reaches the REST Service may run operations ' +
      '(/kubernetes/ops) and add accounts (/armory/accounts/dynamic). Keep it on and list trustedNetworks.',
    check: (t) =>
      t.pluginServer.restAuth.enabled
        ? []
        : [{ path: '/pluginServer/rest/auth/enabled', message: 'the REST API accepts anyone who reaches it' }],
  },
  // "Replicas > 1 without a PodDisruptionBudget" cannot be written in a topology: the model gives every workload with
  // more than one replica a budget of maxUnavailable 1, and no key turns it off (docs/policy-checks.md). The two
  // rules below catch what can still go wrong around that budget.
  {
    id: 'SA012',
    name: 'single-replica-plugin-server',
    severity: 'warning',
    summary:
      'The plugin-server stores in a shared SQL store but runs one replica, so it gets no PodDisruptionBudget (a budget for one ' +
      'pod either allows its eviction or blocks every drain): a drain of its node cuts every agent stream and the ' +
      'REST API until the pod is back. Run 2 or more replicas; the SQL store is what lets them share state.',
    check: (t) =>
      t.pluginServer.storage.type !== 'memory' && t.pluginServer.replicas === 1
        ? [
            {
              path: '/pluginServer/replicas',
              message: 'one plugin-server replica on shared storage: a node drain takes the control plane down',
            },
          ]
        : [],
  },
  {
    id: 'SA013',
    name: 'disruption-budget-blocks-drain',
    severity: 'error',
    summary:
      'A workload with more than one replica is pinned to a single node (kubernetes.io/hostname nodeSelector or ' +
      'required node affinity). Its PodDisruptionBudget (maxUnavailable 1) then stops the drain of that node: the ' +
      'first evicted pod cannot start anywhere else, so no second eviction is ever allowed. Pin to a node pool label.',
    check: (t) =>
      workloads(t).flatMap((w) => {
        const at = w.replicas > 1 ? pinnedToOneNode(w.pod, w.path) : undefined;
        return at
          ? [
              {
                path: at,
                message: `${w.what} runs ${w.replicas} replicas on one node: its PodDisruptionBudget blocks that node's drain`,
              },
            ]
          : [];
      }),
  },
  {
    id: 'SA014',
    name: 'network-policies-disabled',
    severity: 'warning',
    summary:
      'networkPolicies.enabled is false: synth emits no NetworkPolicy, so any pod of the cluster may call the ' +
      "plugin-server's REST and gRPC ports and agents may dial anywhere, unless the cluster's own policies say " +
      "otherwise. Keep them on and list Spinnaker's namespaces in networkPolicies.spinnakerNamespaces.",
    check: (t) =>
      t.networkPolicies.enabled
        ? []
        : [{ path: '/networkPolicies/enabled', message: 'no NetworkPolicy for the plugin-server or any agent group' }],
  },
];

export interface CheckReport {
  ok: boolean;
  file: string;
  errors: number;
  warnings: number;
  violations: Violation[];
}

/** Runs every policy rule (or those in `only`), locating each finding in the source. */
export function checkTopology(t: Topology, src: LoadedYaml, options: { failOn?: Severity } = {}): CheckReport {
  const violations: Violation[] = [];
  for (const rule of POLICY_RULES) {
    for (const f of rule.check(t)) {
      violations.push({ rule: rule.id, name: rule.name, severity: rule.severity, ...src.detail(f.path, f.message) });
    }
  }
  const errors = violations.filter((v) => v.severity === 'error').length;
  const warnings = violations.length - errors;
  const failOn = options.failOn ?? 'error';
  return {
    ok: failOn === 'warning' ? violations.length === 0 : errors === 0,
    file: src.file,
    errors,
    warnings,
    violations,
  };
}
