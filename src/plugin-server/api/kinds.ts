/**
 * Clouddriver's kind vocabulary: canonical lowerCamel names ("replicaSet"), the aliases its kind lookup accepts,
 * and "kind.group" for everything it does not know (CRDs). See reference/clouddriver-api.md §0.
 */
interface KnownKind {
  kind: string;
  group: string;
}

const KNOWN: Record<string, KnownKind> = {
  deployment: { kind: 'Deployment', group: 'apps' },
  replicaSet: { kind: 'ReplicaSet', group: 'apps' },
  statefulSet: { kind: 'StatefulSet', group: 'apps' },
  daemonSet: { kind: 'DaemonSet', group: 'apps' },
  controllerRevision: { kind: 'ControllerRevision', group: 'apps' },
  configMap: { kind: 'ConfigMap', group: '' },
  secret: { kind: 'Secret', group: '' },
  service: { kind: 'Service', group: '' },
  pod: { kind: 'Pod', group: '' },
  namespace: { kind: 'Namespace', group: '' },
  serviceAccount: { kind: 'ServiceAccount', group: '' },
  persistentVolume: { kind: 'PersistentVolume', group: '' },
  persistentVolumeClaim: { kind: 'PersistentVolumeClaim', group: '' },
  event: { kind: 'Event', group: '' },
  limitRange: { kind: 'LimitRange', group: '' },
  resourceQuota: { kind: 'ResourceQuota', group: '' },
  job: { kind: 'Job', group: 'batch' },
  cronJob: { kind: 'CronJob', group: 'batch' },
  ingress: { kind: 'Ingress', group: 'networking.k8s.io' },
  networkPolicy: { kind: 'NetworkPolicy', group: 'networking.k8s.io' },
  horizontalpodautoscaler: { kind: 'HorizontalPodAutoscaler', group: 'autoscaling' },
  podDisruptionBudget: { kind: 'PodDisruptionBudget', group: 'policy' },
  role: { kind: 'Role', group: 'rbac.authorization.k8s.io' },
  roleBinding: { kind: 'RoleBinding', group: 'rbac.authorization.k8s.io' },
  clusterRole: { kind: 'ClusterRole', group: 'rbac.authorization.k8s.io' },
  clusterRoleBinding: { kind: 'ClusterRoleBinding', group: 'rbac.authorization.k8s.io' },
  customResourceDefinition: { kind: 'CustomResourceDefinition', group: 'apiextensions.k8s.io' },
  storageClass: { kind: 'StorageClass', group: 'storage.k8s.io' },
  apiService: { kind: 'APIService', group: 'apiregistration.k8s.io' },
};

const ALIASES: Record<string, string> = {
  deploy: 'deployment',
  rs: 'replicaSet',
  svc: 'service',
  cm: 'configMap',
  ns: 'namespace',
  po: 'pod',
  ds: 'daemonSet',
  sts: 'statefulSet',
  sa: 'serviceAccount',
  pvc: 'persistentVolumeClaim',
  pv: 'persistentVolume',
  sc: 'storageClass',
  netpol: 'networkPolicy',
  hpa: 'horizontalpodautoscaler',
  crd: 'customResourceDefinition',
};

const BY_LOWER = new Map<string, string>(Object.keys(KNOWN).map((k) => [k.toLowerCase(), k]));
const BY_KIND = new Map<string, string>(Object.entries(KNOWN).map(([name, k]) => [`${k.group}/${k.kind}`, name]));

export interface KindQuery {
  kind: string;
  /** undefined: any group. */
  group: string | undefined;
}

/** Resolves the kind half of a Clouddriver name ("deployment", "rs", "crontab.stable.example.com", "Widget"). */
export function resolveKind(spec: string): KindQuery {
  const lower = spec.toLowerCase();
  const canonical = BY_LOWER.get(lower) ?? ALIASES[lower];
  if (canonical) {
    const k = KNOWN[canonical]!;
    return { kind: k.kind, group: k.group };
  }
  const dot = spec.indexOf('.');
  if (dot > 0) return { kind: spec.slice(0, dot), group: spec.slice(dot + 1) };
  return { kind: spec, group: undefined };
}

/** The name Clouddriver prints for a kind: "replicaSet", or "CronTab.stable.example.com" for kinds it does not know. */
export function canonicalKindName(group: string, kind: string): string {
  const known = BY_KIND.get(`${group}/${kind}`);
  if (known) return known;
  if (!group) return kind.charAt(0).toLowerCase() + kind.slice(1);
  return `${kind}.${group}`;
}

/** "deployment web" → ["deployment", "web"]; split on the first space as Clouddriver does. */
export function splitFullName(fullName: string): [string, string] | undefined {
  const space = fullName.indexOf(' ');
  if (space <= 0 || space === fullName.length - 1) return undefined;
  return [fullName.slice(0, space), fullName.slice(space + 1)];
}

/** Clouddriver's `spinnakerKindMap` for /credentials?expand=true. */
export const SPINNAKER_KIND_MAP: Record<string, string> = {
  deployment: 'serverGroupManagers',
  replicaSet: 'serverGroups',
  statefulSet: 'serverGroups',
  daemonSet: 'serverGroups',
  job: 'serverGroups',
  cronJob: 'serverGroups',
  pod: 'instances',
  service: 'loadBalancers',
  ingress: 'loadBalancers',
  networkPolicy: 'securityGroups',
  configMap: 'configs',
  secret: 'configs',
  persistentVolume: 'configs',
  persistentVolumeClaim: 'configs',
};
