/**
 * Kinds as Clouddriver names them: canonical lowerCamel names for the kinds it knows ("replicaSet"), aliases
 * ("rs"), and `Kind.group` for kinds outside the native API groups ("CronTab.stable.example.com"). Lookups
 * ignore case, as Clouddriver's do. The capability columns mirror Clouddriver's handler interfaces, which
 * decide which operation may run on which kind.
 */

export type Capability = 'scale' | 'rollout' | 'traffic' | 'loadBalancer' | 'hasPods';

export interface KnownKind {
  /** Canonical Clouddriver spelling, used in every name we output. */
  name: string;
  /** Kubernetes `kind`. */
  kind: string;
  /** API group ('' = core). */
  group: string;
  alias?: string;
  namespaced: boolean;
  /** Deployed as `<name>-vNNN` unless told otherwise. */
  versioned: boolean;
  /** Lower is deployed first. */
  priority: number;
  capabilities: Capability[];
}

const WORKLOAD: Capability[] = ['rollout', 'traffic'];

export const KNOWN_KINDS: readonly KnownKind[] = [
  {
    name: 'namespace',
    kind: 'Namespace',
    group: '',
    alias: 'ns',
    namespaced: false,
    versioned: false,
    priority: 0,
    capabilities: [],
  },
  {
    name: 'role',
    kind: 'Role',
    group: 'rbac.authorization.k8s.io',
    namespaced: true,
    versioned: false,
    priority: 20,
    capabilities: [],
  },
  {
    name: 'clusterRole',
    kind: 'ClusterRole',
    group: 'rbac.authorization.k8s.io',
    namespaced: false,
    versioned: false,
    priority: 20,
    capabilities: [],
  },
  {
    name: 'roleBinding',
    kind: 'RoleBinding',
    group: 'rbac.authorization.k8s.io',
    namespaced: true,
    versioned: false,
    priority: 30,
    capabilities: [],
  },
  {
    name: 'clusterRoleBinding',
    kind: 'ClusterRoleBinding',
    group: 'rbac.authorization.k8s.io',
    namespaced: false,
    versioned: false,
    priority: 30,
    capabilities: [],
  },
  {
    name: 'customResourceDefinition',
    kind: 'CustomResourceDefinition',
    group: 'apiextensions.k8s.io',
    alias: 'crd',
    namespaced: false,
    versioned: false,
    priority: 30,
    capabilities: [],
  },
  {
    name: 'serviceAccount',
    kind: 'ServiceAccount',
    group: '',
    alias: 'sa',
    namespaced: true,
    versioned: false,
    priority: 40,
    capabilities: [],
  },
  {
    name: 'storageClass',
    kind: 'StorageClass',
    group: 'storage.k8s.io',
    alias: 'sc',
    namespaced: false,
    versioned: false,
    priority: 40,
    capabilities: [],
  },
  {
    name: 'mutatingWebhookConfiguration',
    kind: 'MutatingWebhookConfiguration',
    group: 'admissionregistration.k8s.io',
    namespaced: false,
    versioned: false,
    priority: 40,
    capabilities: [],
  },
  {
    name: 'validatingWebhookConfiguration',
    kind: 'ValidatingWebhookConfiguration',
    group: 'admissionregistration.k8s.io',
    namespaced: false,
    versioned: false,
    priority: 40,
    capabilities: [],
  },
  {
    name: 'persistentVolume',
    kind: 'PersistentVolume',
    group: '',
    alias: 'pv',
    namespaced: false,
    versioned: false,
    priority: 40,
    capabilities: [],
  },
  {
    name: 'configMap',
    kind: 'ConfigMap',
    group: '',
    alias: 'cm',
    namespaced: true,
    versioned: true,
    priority: 50,
    capabilities: [],
  },
  { name: 'secret', kind: 'Secret', group: '', namespaced: true, versioned: true, priority: 50, capabilities: [] },
  {
    name: 'persistentVolumeClaim',
    kind: 'PersistentVolumeClaim',
    group: '',
    alias: 'pvc',
    namespaced: true,
    versioned: false,
    priority: 50,
    capabilities: [],
  },
  {
    name: 'service',
    kind: 'Service',
    group: '',
    alias: 'svc',
    namespaced: true,
    versioned: false,
    priority: 70,
    capabilities: ['loadBalancer'],
  },
  {
    name: 'ingress',
    kind: 'Ingress',
    group: 'networking.k8s.io',
    namespaced: true,
    versioned: false,
    priority: 70,
    capabilities: [],
  },
  {
    name: 'networkPolicy',
    kind: 'NetworkPolicy',
    group: 'networking.k8s.io',
    alias: 'netpol',
    namespaced: true,
    versioned: false,
    priority: 70,
    capabilities: [],
  },
  {
    name: 'apiService',
    kind: 'APIService',
    group: 'apiregistration.k8s.io',
    namespaced: false,
    versioned: false,
    priority: 80,
    capabilities: [],
  },
  {
    name: 'podDisruptionBudget',
    kind: 'PodDisruptionBudget',
    group: 'policy',
    namespaced: true,
    versioned: false,
    priority: 90,
    capabilities: [],
  },
  {
    name: 'limitRange',
    kind: 'LimitRange',
    group: '',
    namespaced: true,
    versioned: false,
    priority: 90,
    capabilities: [],
  },
  {
    name: 'deployment',
    kind: 'Deployment',
    group: 'apps',
    alias: 'deploy',
    namespaced: true,
    versioned: false,
    priority: 100,
    capabilities: ['scale', ...WORKLOAD],
  },
  {
    name: 'replicaSet',
    kind: 'ReplicaSet',
    group: 'apps',
    alias: 'rs',
    namespaced: true,
    versioned: true,
    priority: 100,
    capabilities: ['scale', 'traffic', 'hasPods'],
  },
  {
    name: 'statefulSet',
    kind: 'StatefulSet',
    group: 'apps',
    namespaced: true,
    versioned: false,
    priority: 100,
    capabilities: ['scale', ...WORKLOAD],
  },
  {
    name: 'daemonSet',
    kind: 'DaemonSet',
    group: 'apps',
    alias: 'ds',
    namespaced: true,
    versioned: false,
    priority: 100,
    capabilities: WORKLOAD,
  },
  {
    name: 'job',
    kind: 'Job',
    group: 'batch',
    namespaced: true,
    versioned: false,
    priority: 100,
    capabilities: ['traffic'],
  },
  {
    name: 'cronJob',
    kind: 'CronJob',
    group: 'batch',
    namespaced: true,
    versioned: false,
    priority: 100,
    capabilities: ['traffic'],
  },
  {
    name: 'pod',
    kind: 'Pod',
    group: '',
    alias: 'po',
    namespaced: true,
    versioned: true,
    priority: 100,
    capabilities: ['traffic'],
  },
  {
    name: 'controllerRevision',
    kind: 'ControllerRevision',
    group: 'apps',
    namespaced: true,
    versioned: false,
    priority: 100,
    capabilities: [],
  },
  {
    name: 'horizontalpodautoscaler',
    kind: 'HorizontalPodAutoscaler',
    group: 'autoscaling',
    alias: 'hpa',
    namespaced: true,
    versioned: false,
    priority: 110,
    capabilities: [],
  },
  { name: 'event', kind: 'Event', group: '', namespaced: true, versioned: false, priority: 100, capabilities: [] },
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

/** Custom resources are deployed last so their definitions exist first. */
export const CUSTOM_PRIORITY = 1000;

const byLowerName = new Map<string, KnownKind>();
const byKind = new Map<string, KnownKind>();
for (const k of KNOWN_KINDS) {
  byLowerName.set(k.name.toLowerCase(), k);
  if (k.alias) byLowerName.set(k.alias, k);
  byKind.set(k.kind, k);
}

/** A kind as a client wrote it ("deployment", "rs", "CronTab.stable.example.com"), not yet resolved. */
export interface KindRef {
  /** Kind name without group, as written ("deployment", "CronTab"). */
  name: string;
  /** Group when written as `kind.group`; undefined when not given. */
  group?: string;
  /** The known kind this names, if any. */
  known?: KnownKind;
}

export function parseKind(text: string): KindRef {
  const trimmed = text.trim();
  const dot = trimmed.indexOf('.');
  const name = dot < 0 ? trimmed : trimmed.slice(0, dot);
  const group = dot < 0 ? undefined : trimmed.slice(dot + 1).toLowerCase();
  const known = byLowerName.get(name.toLowerCase());
  if (known && (group === undefined || group === known.group || (group === 'core' && known.group === ''))) {
    return { name, group: known.group, known };
  }
  return group === undefined ? { name } : { name, group };
}

export function knownKindOf(apiVersion: string, kind: string): KnownKind | undefined {
  const k = byKind.get(kind);
  if (!k) return undefined;
  const group = groupOf(apiVersion);
  // extensions/v1beta1 Deployments and friends are the same kinds under an old group.
  return group === k.group || group === 'extensions' ? k : undefined;
}

export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Clouddriver's name for the kind of an object: "replicaSet", "Lease", "CronTab.stable.example.com". */
export function spinnakerKind(apiVersion: string, kind: string): string {
  const known = knownKindOf(apiVersion, kind);
  if (known) return known.name;
  const group = groupOf(apiVersion);
  return NATIVE_GROUPS.has(group) ? kind : `${kind}.${group}`;
}

/** "deployment web" from an object. */
export function fullResourceName(obj: { apiVersion?: string; kind?: string; metadata?: { name?: string } }): string {
  return `${spinnakerKind(obj.apiVersion ?? '', obj.kind ?? '')} ${obj.metadata?.name ?? ''}`;
}

export interface ResourceName {
  kind: KindRef;
  name: string;
}

/** Splits "deployment web" on the first space; undefined when either half is empty. */
export function parseFullResourceName(text: string): ResourceName | undefined {
  const trimmed = text.trim();
  const space = trimmed.indexOf(' ');
  if (space <= 0) return undefined;
  const kind = trimmed.slice(0, space);
  const name = trimmed.slice(space + 1).trim();
  if (!name) return undefined;
  return { kind: parseKind(kind), name };
}

export function hasCapability(ref: KindRef, capability: Capability): boolean {
  return ref.known?.capabilities.includes(capability) ?? false;
}

/** Whether a kind is namespaced, when we can tell without asking the API server. */
export function knownNamespaced(apiVersion: string, kind: string): boolean | undefined {
  return knownKindOf(apiVersion, kind)?.namespaced;
}

export function deployPriority(apiVersion: string, kind: string): number {
  return knownKindOf(apiVersion, kind)?.priority ?? (NATIVE_GROUPS.has(groupOf(apiVersion)) ? 100 : CUSTOM_PRIORITY);
}
