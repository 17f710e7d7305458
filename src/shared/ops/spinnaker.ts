import { knownKindOf, spinnakerKind } from './kinds.js';
import type { Artifact, KubeObject, Moniker } from './types.js';

/** The annotation and label contract Clouddriver writes into deployed objects (Deck and Orca read it back). */
export const ANNOTATIONS = {
  application: 'moniker.spinnaker.io/application',
  cluster: 'moniker.spinnaker.io/cluster',
  stack: 'moniker.spinnaker.io/stack',
  detail: 'moniker.spinnaker.io/detail',
  sequence: 'moniker.spinnaker.io/sequence',
  artifactType: 'artifact.spinnaker.io/type',
  artifactName: 'artifact.spinnaker.io/name',
  artifactLocation: 'artifact.spinnaker.io/location',
  artifactVersion: 'artifact.spinnaker.io/version',
  loadBalancers: 'traffic.spinnaker.io/load-balancers',
  versioned: 'strategy.spinnaker.io/versioned',
  maxVersionHistory: 'strategy.spinnaker.io/max-version-history',
  useSourceCapacity: 'strategy.spinnaker.io/use-source-capacity',
  recreate: 'strategy.spinnaker.io/recreate',
  replace: 'strategy.spinnaker.io/replace',
  serverSideApply: 'strategy.spinnaker.io/server-side-apply',
  ignoreCaching: 'caching.spinnaker.io/ignore',
  lastApplied: 'kubectl.kubernetes.io/last-applied-configuration',
  deploymentRevision: 'deployment.kubernetes.io/revision',
  restartedAt: 'kubectl.kubernetes.io/restartedAt',
  changeCause: 'kubernetes.io/change-cause',
  /** Ours: `server-side` | `client-side`, per manifest. */
  applyMode: 'scale-agent.io/apply-mode',
  /** Ours: hash of the deployed content, so identical redeploys reuse their version under server-side apply. */
  configHash: 'scale-agent.io/config-hash',
  /**
   * Ours: the id (`<taskId>.<index>`) of the operation that created this object, so the operation sent again after an
   * agent restart finds it instead of creating another (docs/clouddriver-compatibility.md, "Operations sent again").
   */
  operationId: 'scale-agent.io/operation-id',
  /** Ours: the id of the last operation whose JSON patch this object took, written by that same patch. */
  lastOperationId: 'scale-agent.io/last-operation-id',
} as const;

export const LABELS = {
  name: 'app.kubernetes.io/name',
  managedBy: 'app.kubernetes.io/managed-by',
  sequence: 'moniker.spinnaker.io/sequence',
  /**
   * Ours: a digest of the creating operation's id and the manifest's place in it (label values are at most 63
   * characters of a restricted alphabet), so a repeat can find a generateName object with a label selector.
   */
  operationKey: 'scale-agent.io/operation-key',
} as const;

export interface DeployStrategy {
  /** undefined = not set (the description or the kind decides). */
  versioned?: boolean;
  maxVersionHistory?: number;
  useSourceCapacity: boolean;
  recreate: boolean;
  replace: boolean;
  /** undefined = not set; 'force-conflicts' = server-side apply with force. */
  serverSideApply?: 'true' | 'false' | 'force-conflicts';
}

export function strategyOf(obj: KubeObject): DeployStrategy {
  const a = obj.metadata.annotations ?? {};
  const flag = (key: string): boolean | undefined =>
    a[key] === undefined ? undefined : String(a[key]).toLowerCase() === 'true';
  const out: DeployStrategy = {
    useSourceCapacity: flag(ANNOTATIONS.useSourceCapacity) ?? false,
    recreate: flag(ANNOTATIONS.recreate) ?? false,
    replace: flag(ANNOTATIONS.replace) ?? false,
  };
  const versioned = flag(ANNOTATIONS.versioned);
  if (versioned !== undefined) out.versioned = versioned;
  const max = Number(a[ANNOTATIONS.maxVersionHistory]);
  if (a[ANNOTATIONS.maxVersionHistory] !== undefined && Number.isInteger(max)) out.maxVersionHistory = max;
  const ssa = a[ANNOTATIONS.serverSideApply]?.toLowerCase();
  if (ssa === 'true' || ssa === 'false' || ssa === 'force-conflicts') out.serverSideApply = ssa;
  return out;
}

/** `v003` for 3. */
export const versionString = (n: number): string => `v${String(n).padStart(3, '0')}`;

/** 3 for `web-v003` (Frigga's rule: a trailing `-vNNN` of at least three digits). */
export function versionOfName(name: string): number | undefined {
  const m = /-v(\d{3,})$/.exec(name);
  return m ? Number(m[1]) : undefined;
}

/** The artifact Clouddriver records for a deployed manifest (`createdArtifacts`). */
export function artifactOf(obj: KubeObject, baseName: string, account: string, version: number | undefined): Artifact {
  const kind = spinnakerKind(obj.apiVersion, obj.kind);
  const v = version === undefined ? '' : versionString(version);
  return {
    type: `kubernetes/${kind}`,
    name: baseName,
    location: obj.metadata.namespace ?? '',
    version: v,
    reference: v ? `${baseName}-${v}` : baseName,
    customKind: !knownKindOf(obj.apiVersion, obj.kind),
    metadata: { account },
  };
}

type Annotations = Record<string, string>;

function store(map: Annotations, key: string, value: string | number | undefined): void {
  // Clouddriver never overwrites an annotation the manifest already carries.
  if (value === undefined || value === '' || key in map) return;
  map[key] = String(value);
}

function templateMetadata(obj: KubeObject): { labels?: Annotations; annotations?: Annotations } | undefined {
  const spec = obj.spec as
    { template?: { metadata?: { labels?: Annotations; annotations?: Annotations } } } | undefined;
  if (!spec || typeof spec !== 'object' || !spec.template || typeof spec.template !== 'object') return undefined;
  spec.template.metadata ??= {};
  return spec.template.metadata;
}

/**
 * Writes the moniker and artifact annotations and the moniker labels into `obj` (in place), on the object and on
 * its pod template, as Clouddriver's annotater and `kubernetesAnnotations` namer do.
 */
export function annotateManifest(
  obj: KubeObject,
  opts: { moniker: Moniker; artifact: Artifact; skipSpecTemplateLabels: boolean; managedBy?: string },
): void {
  const targets: Annotations[] = [(obj.metadata.annotations ??= {})];
  const template = templateMetadata(obj);
  if (template) targets.push((template.annotations ??= {}));
  for (const a of targets) {
    store(a, ANNOTATIONS.cluster, opts.moniker.cluster);
    store(a, ANNOTATIONS.application, opts.moniker.app);
    store(a, ANNOTATIONS.stack, opts.moniker.stack);
    store(a, ANNOTATIONS.detail, opts.moniker.detail);
    store(a, ANNOTATIONS.sequence, opts.moniker.sequence);
    store(a, ANNOTATIONS.artifactType, opts.artifact.type);
    store(a, ANNOTATIONS.artifactName, opts.artifact.name);
    store(a, ANNOTATIONS.artifactLocation, opts.artifact.location);
    store(a, ANNOTATIONS.artifactVersion, opts.artifact.version);
  }
  const labelTargets: Annotations[] = [(obj.metadata.labels ??= {})];
  if (template && !opts.skipSpecTemplateLabels) labelTargets.push((template.labels ??= {}));
  for (const l of labelTargets) {
    if (!(LABELS.name in l)) l[LABELS.name] = opts.moniker.app;
    l[LABELS.managedBy] = opts.managedBy ?? 'spinnaker';
    if (opts.moniker.sequence !== undefined) l[LABELS.sequence] = String(opts.moniker.sequence);
  }
}

/** The moniker of a live object: annotations first, then the name parsed Frigga-style. */
export function monikerOf(obj: KubeObject): Moniker {
  const a = obj.metadata.annotations ?? {};
  const name = obj.metadata.name ?? '';
  const parsed = parseFriggaName(name);
  const out: Moniker = {
    app: a[ANNOTATIONS.application] ?? parsed.app,
    cluster: a[ANNOTATIONS.cluster] ?? parsed.cluster,
  };
  if (a[ANNOTATIONS.stack]) out.stack = a[ANNOTATIONS.stack];
  if (a[ANNOTATIONS.detail]) out.detail = a[ANNOTATIONS.detail];
  const seq =
    a[ANNOTATIONS.sequence] ??
    (obj.kind === 'ReplicaSet' ? a[ANNOTATIONS.deploymentRevision] : undefined) ??
    (parsed.sequence === undefined ? undefined : String(parsed.sequence));
  if (seq !== undefined && /^\d+$/.test(seq)) out.sequence = Number(seq);
  return out;
}

function parseFriggaName(name: string): { app: string; cluster: string; sequence?: number } {
  const sequence = versionOfName(name);
  const cluster = sequence === undefined ? name : name.replace(/-v\d{3,}$/, '');
  const app = cluster.split('-')[0] ?? cluster;
  return sequence === undefined ? { app, cluster } : { app, cluster, sequence };
}

/** The `traffic.spinnaker.io/load-balancers` list; [] when absent or unreadable. */
export function loadBalancersOf(obj: KubeObject): string[] {
  const raw = obj.metadata.annotations?.[ANNOTATIONS.loadBalancers];
  if (!raw) return [];
  try {
    const v = JSON.parse(raw) as unknown;
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return [];
  }
}
