/**
 * The one table of Kubernetes kinds the project knows. Each row is a kind as the API server names it (group,
 * plural resource, scope) with two column sets:
 * - `clouddriver`: how Clouddriver names and treats it (lowerCamel name, alias, versioning, deploy priority, the
 *   handler capabilities that decide which operation may run on it, and its `spinnakerKindMap` category). Rows
 *   without it are kinds Clouddriver does not register: it names them by their `kind` (native groups) or
 *   `Kind.group`, exactly as it names custom resources.
 * - `rbac`: what the compiler grants an account caching it (cached by default, writable, operation subresources).
 * The operation vocabulary (`shared/ops/kinds.ts`), the REST reads (`plugin-server/views/kinds.ts`) and the compiler's
 * RBAC (`compiler/kinds.ts`) are views of this table, so they cannot name a kind two ways.
 */

export type Capability = 'scale' | 'rollout' | 'traffic' | 'loadBalancer' | 'hasPods';

/** Clouddriver's `spinnakerKindMap` categories (shown by /credentials?expand=true). */
export type SpinnakerCategory =
  'serverGroupManagers' | 'serverGroups' | 'instances' | 'loadBalancers' | 'securityGroups' | 'configs';

export interface ClouddriverColumns {
  /** Canonical Clouddriver spelling, used in every name we output. */
  name: string;
  alias?: string;
  /** Deployed as `<name>-vNNN` unless told otherwise. */
  versioned: boolean;
  /** Lower is deployed first. */
  priority: number;
  capabilities: Capability[];
  category?: SpinnakerCategory;
}

export interface RbacColumns {
  /** Cached (and granted) when an account lists no `kinds`. */
  cachedByDefault: boolean;
  /** Read-write accounts may create/update/patch/delete it (Spinnaker deploys it). */
  deployable: boolean;
  /** Subresources a read-write account needs for operations (scale, rollback, restart). */
  writeSubresources?: string[];
  /** Subresources every account needs to read (logs). */
  readSubresources?: string[];
}

export interface KindRow {
  /** Kubernetes `kind`. */
  kind: string;
  /** API group ('' = core). */
  group: string;
  /** Plural resource, as RBAC and the REST paths spell it. */
  resource: string;
  namespaced: boolean;
  clouddriver?: ClouddriverColumns;
  rbac: RbacColumns;
}

const WORKLOAD: Capability[] = ['rollout', 'traffic'];
const RBAC = 'rbac.authorization.k8s.io';
/** Cached by default; read-write accounts deploy it. */
const CACHED_RW: RbacColumns = { cachedByDefault: true, deployable: true };
/** Cached by default, never written (cluster plumbing or observations). */
const CACHED_RO: RbacColumns = { cachedByDefault: true, deployable: false };
/** Only when an account lists it; read-write accounts may deploy it. */
const LISTED_RW: RbacColumns = { cachedByDefault: false, deployable: true };
/** Only when an account lists it; never written. */
const LISTED_RO: RbacColumns = { cachedByDefault: false, deployable: false };

function cd(
  name: string,
  priority: number,
  opts: Partial<Omit<ClouddriverColumns, 'name' | 'priority'>> = {},
): ClouddriverColumns {
  return { name, priority, versioned: false, capabilities: [], ...opts };
}

export const KINDS: readonly KindRow[] = [
  // Cached by default, in the order agent configs list them.
  {
    kind: 'ConfigMap',
    group: '',
    resource: 'configmaps',
    namespaced: true,
    clouddriver: cd('configMap', 50, { alias: 'cm', versioned: true, category: 'configs' }),
    rbac: CACHED_RW,
  },
  { kind: 'Event', group: '', resource: 'events', namespaced: true, clouddriver: cd('event', 100), rbac: CACHED_RO },
  {
    kind: 'Namespace',
    group: '',
    resource: 'namespaces',
    namespaced: false,
    clouddriver: cd('namespace', 0, { alias: 'ns' }),
    rbac: CACHED_RO,
  },
  {
    kind: 'Pod',
    group: '',
    resource: 'pods',
    namespaced: true,
    clouddriver: cd('pod', 100, { alias: 'po', versioned: true, capabilities: ['traffic'], category: 'instances' }),
    rbac: { ...CACHED_RW, readSubresources: ['log'] },
  },
  {
    kind: 'PersistentVolumeClaim',
    group: '',
    resource: 'persistentvolumeclaims',
    namespaced: true,
    clouddriver: cd('persistentVolumeClaim', 50, { alias: 'pvc', category: 'configs' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'Secret',
    group: '',
    resource: 'secrets',
    namespaced: true,
    clouddriver: cd('secret', 50, { versioned: true, category: 'configs' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'Service',
    group: '',
    resource: 'services',
    namespaced: true,
    clouddriver: cd('service', 70, { alias: 'svc', capabilities: ['loadBalancer'], category: 'loadBalancers' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'ServiceAccount',
    group: '',
    resource: 'serviceaccounts',
    namespaced: true,
    clouddriver: cd('serviceAccount', 40, { alias: 'sa' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'ControllerRevision',
    group: 'apps',
    resource: 'controllerrevisions',
    namespaced: true,
    clouddriver: cd('controllerRevision', 100),
    rbac: CACHED_RO,
  },
  {
    kind: 'DaemonSet',
    group: 'apps',
    resource: 'daemonsets',
    namespaced: true,
    clouddriver: cd('daemonSet', 100, { alias: 'ds', capabilities: WORKLOAD, category: 'serverGroups' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'Deployment',
    group: 'apps',
    resource: 'deployments',
    namespaced: true,
    clouddriver: cd('deployment', 100, {
      alias: 'deploy',
      capabilities: ['scale', ...WORKLOAD],
      category: 'serverGroupManagers',
    }),
    rbac: { ...CACHED_RW, writeSubresources: ['scale'] },
  },
  {
    kind: 'ReplicaSet',
    group: 'apps',
    resource: 'replicasets',
    namespaced: true,
    clouddriver: cd('replicaSet', 100, {
      alias: 'rs',
      versioned: true,
      capabilities: ['scale', 'traffic', 'hasPods'],
      category: 'serverGroups',
    }),
    rbac: { ...CACHED_RW, writeSubresources: ['scale'] },
  },
  {
    kind: 'StatefulSet',
    group: 'apps',
    resource: 'statefulsets',
    namespaced: true,
    clouddriver: cd('statefulSet', 100, { capabilities: ['scale', ...WORKLOAD], category: 'serverGroups' }),
    rbac: { ...CACHED_RW, writeSubresources: ['scale'] },
  },
  {
    kind: 'HorizontalPodAutoscaler',
    group: 'autoscaling',
    resource: 'horizontalpodautoscalers',
    namespaced: true,
    clouddriver: cd('horizontalpodautoscaler', 110, { alias: 'hpa' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'CronJob',
    group: 'batch',
    resource: 'cronjobs',
    namespaced: true,
    clouddriver: cd('cronJob', 100, { capabilities: ['traffic'], category: 'serverGroups' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'Job',
    group: 'batch',
    resource: 'jobs',
    namespaced: true,
    clouddriver: cd('job', 100, { capabilities: ['traffic'], category: 'serverGroups' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'Ingress',
    group: 'networking.k8s.io',
    resource: 'ingresses',
    namespaced: true,
    clouddriver: cd('ingress', 70, { category: 'loadBalancers' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'NetworkPolicy',
    group: 'networking.k8s.io',
    resource: 'networkpolicies',
    namespaced: true,
    clouddriver: cd('networkPolicy', 70, { alias: 'netpol', category: 'securityGroups' }),
    rbac: CACHED_RW,
  },
  {
    kind: 'PodDisruptionBudget',
    group: 'policy',
    resource: 'poddisruptionbudgets',
    namespaced: true,
    clouddriver: cd('podDisruptionBudget', 90),
    rbac: CACHED_RW,
  },
  {
    kind: 'CustomResourceDefinition',
    group: 'apiextensions.k8s.io',
    resource: 'customresourcedefinitions',
    namespaced: false,
    clouddriver: cd('customResourceDefinition', 30, { alias: 'crd' }),
    rbac: CACHED_RO,
  },
  // Only when an account lists them.
  {
    kind: 'PersistentVolume',
    group: '',
    resource: 'persistentvolumes',
    namespaced: false,
    clouddriver: cd('persistentVolume', 40, { alias: 'pv', category: 'configs' }),
    rbac: LISTED_RO,
  },
  {
    kind: 'LimitRange',
    group: '',
    resource: 'limitranges',
    namespaced: true,
    clouddriver: cd('limitRange', 90),
    rbac: LISTED_RW,
  },
  { kind: 'Endpoints', group: '', resource: 'endpoints', namespaced: true, rbac: LISTED_RO },
  { kind: 'ResourceQuota', group: '', resource: 'resourcequotas', namespaced: true, rbac: LISTED_RW },
  { kind: 'EndpointSlice', group: 'discovery.k8s.io', resource: 'endpointslices', namespaced: true, rbac: LISTED_RO },
  { kind: 'Role', group: RBAC, resource: 'roles', namespaced: true, clouddriver: cd('role', 20), rbac: LISTED_RW },
  {
    kind: 'ClusterRole',
    group: RBAC,
    resource: 'clusterroles',
    namespaced: false,
    clouddriver: cd('clusterRole', 20),
    rbac: LISTED_RO,
  },
  {
    kind: 'RoleBinding',
    group: RBAC,
    resource: 'rolebindings',
    namespaced: true,
    clouddriver: cd('roleBinding', 30),
    rbac: LISTED_RW,
  },
  {
    kind: 'ClusterRoleBinding',
    group: RBAC,
    resource: 'clusterrolebindings',
    namespaced: false,
    clouddriver: cd('clusterRoleBinding', 30),
    rbac: LISTED_RO,
  },
  {
    kind: 'StorageClass',
    group: 'storage.k8s.io',
    resource: 'storageclasses',
    namespaced: false,
    clouddriver: cd('storageClass', 40, { alias: 'sc' }),
    rbac: LISTED_RO,
  },
  {
    kind: 'MutatingWebhookConfiguration',
    group: 'admissionregistration.k8s.io',
    resource: 'mutatingwebhookconfigurations',
    namespaced: false,
    clouddriver: cd('mutatingWebhookConfiguration', 40),
    rbac: LISTED_RO,
  },
  {
    kind: 'ValidatingWebhookConfiguration',
    group: 'admissionregistration.k8s.io',
    resource: 'validatingwebhookconfigurations',
    namespaced: false,
    clouddriver: cd('validatingWebhookConfiguration', 40),
    rbac: LISTED_RO,
  },
  {
    kind: 'APIService',
    group: 'apiregistration.k8s.io',
    resource: 'apiservices',
    namespaced: false,
    clouddriver: cd('apiService', 80),
    rbac: LISTED_RO,
  },
  {
    kind: 'PriorityClass',
    group: 'scheduling.k8s.io',
    resource: 'priorityclasses',
    namespaced: false,
    rbac: LISTED_RO,
  },
  { kind: 'Lease', group: 'coordination.k8s.io', resource: 'leases', namespaced: true, rbac: LISTED_RO },
];

/** Groups Clouddriver treats as Kubernetes' own: kinds there are named without a `.group` suffix. */
export const NATIVE_GROUPS: ReadonlySet<string> = new Set([
  '',
  'core',
  'batch',
  'apps',
  'extensions',
  'storage.k8s.io',
  'apiextensions.k8s.io',
  'apiregistration.k8s.io',
  'autoscaling',
  'admissionregistration.k8s.io',
  'policy',
  'scheduling.k8s.io',
  'settings.k8s.io',
  'authorization.k8s.io',
  'authentication.k8s.io',
  'rbac.authorization.k8s.io',
  'certificates.k8s.io',
  'networking.k8s.io',
]);

const byGroupKind = new Map(KINDS.map((r) => [`${r.group}/${r.kind}`, r]));

/** The row of a kind by API group and `kind`; `extensions` is the old home of today's apps/networking kinds. */
export function kindRow(group: string, kind: string): KindRow | undefined {
  const g = group === 'core' ? '' : group;
  const exact = byGroupKind.get(`${g}/${kind}`);
  if (exact || g !== 'extensions') return exact;
  return KINDS.find((r) => r.kind === kind && (r.group === 'apps' || r.group === 'networking.k8s.io'));
}

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/**
 * Clouddriver's name for a kind: its registered lowerCamel name ("replicaSet"), else the `kind` itself in a native
 * group ("Endpoints", "PriorityClass"), else `Kind.group` ("CronTab.stable.example.com"), as `KubernetesKind` does.
 */
export function clouddriverKindName(group: string, kind: string): string {
  const row = kindRow(group, kind);
  if (row?.clouddriver) return row.clouddriver.name;
  return NATIVE_GROUPS.has(group) ? kind : `${kind}.${group}`;
}
