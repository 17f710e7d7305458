/**
 * The kinds an account caches and what the agent may do to them. Names follow Kubernetes' API (group, plural
 * resource); the table covers the kinds Spinnaker's Kubernetes provider shows and deploys.
 */
export interface KindInfo {
  kind: string;
  group: string;
  resource: string;
  namespaced: boolean;
  /** Spinnaker deploys it (create/update/patch/delete for read-write accounts). */
  deployable: boolean;
  /** Subresources a read-write account needs for operations (scale, rollback, restart, logs). */
  writeSubresources?: string[];
  readSubresources?: string[];
}

export const BUILTIN_KINDS: readonly KindInfo[] = [
  { kind: 'ConfigMap', group: '', resource: 'configmaps', namespaced: true, deployable: true },
  { kind: 'Event', group: '', resource: 'events', namespaced: true, deployable: false },
  { kind: 'Namespace', group: '', resource: 'namespaces', namespaced: false, deployable: false },
  {
    kind: 'Pod',
    group: '',
    resource: 'pods',
    namespaced: true,
    deployable: true,
    readSubresources: ['log'],
  },
  { kind: 'PersistentVolumeClaim', group: '', resource: 'persistentvolumeclaims', namespaced: true, deployable: true },
  { kind: 'Secret', group: '', resource: 'secrets', namespaced: true, deployable: true },
  { kind: 'Service', group: '', resource: 'services', namespaced: true, deployable: true },
  { kind: 'ServiceAccount', group: '', resource: 'serviceaccounts', namespaced: true, deployable: true },
  { kind: 'ControllerRevision', group: 'apps', resource: 'controllerrevisions', namespaced: true, deployable: false },
  {
    kind: 'DaemonSet',
    group: 'apps',
    resource: 'daemonsets',
    namespaced: true,
    deployable: true,
  },
  {
    kind: 'Deployment',
    group: 'apps',
    resource: 'deployments',
    namespaced: true,
    deployable: true,
    writeSubresources: ['scale'],
  },
  {
    kind: 'ReplicaSet',
    group: 'apps',
    resource: 'replicasets',
    namespaced: true,
    deployable: true,
    writeSubresources: ['scale'],
  },
  {
    kind: 'StatefulSet',
    group: 'apps',
    resource: 'statefulsets',
    namespaced: true,
    deployable: true,
    writeSubresources: ['scale'],
  },
  {
    kind: 'HorizontalPodAutoscaler',
    group: 'autoscaling',
    resource: 'horizontalpodautoscalers',
    namespaced: true,
    deployable: true,
  },
  { kind: 'CronJob', group: 'batch', resource: 'cronjobs', namespaced: true, deployable: true },
  { kind: 'Job', group: 'batch', resource: 'jobs', namespaced: true, deployable: true },
  { kind: 'Ingress', group: 'networking.k8s.io', resource: 'ingresses', namespaced: true, deployable: true },
  {
    kind: 'NetworkPolicy',
    group: 'networking.k8s.io',
    resource: 'networkpolicies',
    namespaced: true,
    deployable: true,
  },
  {
    kind: 'PodDisruptionBudget',
    group: 'policy',
    resource: 'poddisruptionbudgets',
    namespaced: true,
    deployable: true,
  },
  {
    kind: 'CustomResourceDefinition',
    group: 'apiextensions.k8s.io',
    resource: 'customresourcedefinitions',
    namespaced: false,
    deployable: false,
  },
];

const BY_NAME = new Map(BUILTIN_KINDS.map((k) => [k.kind.toLowerCase(), k]));

/** Cached when an account lists no `kinds`: everything above except cluster plumbing it cannot use in a namespace. */
export const DEFAULT_KINDS: readonly string[] = BUILTIN_KINDS.map((k) => k.kind);

export function lookupKind(name: string): KindInfo | undefined {
  return BY_NAME.get(name.toLowerCase());
}

/**
 * `Kind.group` names a custom resource. RBAC needs its plural; it is derived by the English rules the API server's
 * own default (`kubectl api-resources`) uses for nearly every CRD: `y` → `ies`, `s|x|ch|sh` → `+es`, else `+s`.
 */
export function customKind(name: string): KindInfo | undefined {
  const dot = name.indexOf('.');
  if (dot <= 0) return undefined;
  const kind = name.slice(0, dot);
  const group = name.slice(dot + 1);
  const lower = kind.toLowerCase();
  const resource = /[^aeiou]y$/.test(lower)
    ? `${lower.slice(0, -1)}ies`
    : /(s|x|ch|sh)$/.test(lower)
      ? `${lower}es`
      : `${lower}s`;
  return { kind, group, resource, namespaced: true, deployable: true };
}

export function resolveKind(name: string): KindInfo | undefined {
  return name.includes('.') ? customKind(name) : lookupKind(name);
}
