/**
 * Operations after parsing: one normalized shape per Clouddriver operation, whatever envelope it came in
 * (`POST /kubernetes/ops`, `POST /ops`, `POST /kubernetes/ops/{name}`) and however much Orca stage context
 * surrounded it. This is what travels to the agent as `Operation.payload_json`.
 */

/** A Kubernetes object as JSON; only the fields the operations read are typed. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name?: string;
    generateName?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    [k: string]: unknown;
  };
  [k: string]: unknown;
}

export interface Moniker {
  app: string;
  cluster?: string;
  stack?: string;
  detail?: string;
  sequence?: number;
}

/** Spinnaker/kork artifact, as Clouddriver serialises it. */
export interface Artifact {
  type: string;
  name?: string;
  version?: string;
  location?: string;
  reference?: string;
  customKind?: boolean;
  metadata?: Record<string, unknown>;
  artifactAccount?: string;
  provenance?: string;
  uuid?: string;
}

export type SelectorKind = 'ANY' | 'EQUALS' | 'NOT_EQUALS' | 'CONTAINS' | 'NOT_CONTAINS' | 'EXISTS' | 'NOT_EXISTS';
export interface LabelSelector {
  kind: SelectorKind;
  key: string;
  values: string[];
}

/** A target named as Clouddriver does: `location` (namespace, '' = cluster-scoped) and "kind name". */
export interface Target {
  location: string;
  /** Kind as written ("deployment", "rs", "CronTab.stable.example.com"). */
  kind: string;
  name: string;
}

export type ApplyMode = 'server-side' | 'client-side';
export type PropagationPolicy = 'Foreground' | 'Background' | 'Orphan';
export type PatchStrategy = 'strategic' | 'merge' | 'json';

export interface DeployPayload {
  manifests: KubeObject[];
  moniker: Moniker;
  namespaceOverride?: string;
  /** undefined: the kind's default (and the `strategy.spinnaker.io/versioned` annotation wins over both). */
  versioned?: boolean;
  enableTraffic: boolean;
  services: string[];
  enableArtifactBinding: boolean;
  requiredArtifacts: Artifact[];
  optionalArtifacts: Artifact[];
  skipSpecTemplateLabels: boolean;
  /** Account/request default; a manifest's `strategy.spinnaker.io/server-side-apply` or
   * `scale-agent.io/apply-mode` annotation overrides it. */
  applyMode?: ApplyMode;
  /** Set for runJob: always create a new object (recreate strategy), as Clouddriver forces. */
  forceCreate?: boolean;
}

export interface DeletePayload {
  location: string;
  /** Named target, or undefined for a "dynamic" delete of `kinds` filtered by `labelSelectors`. */
  target?: Target;
  kinds: string[];
  labelSelectors: LabelSelector[];
  propagationPolicy?: PropagationPolicy;
  gracePeriodSeconds?: number;
  /** How long to wait for the objects to be gone; 0 = do not wait. */
  waitTimeoutMs: number;
  /** Problems that Clouddriver logs and ignores (a bad gracePeriodSeconds, ...). */
  warnings: string[];
}

export interface PatchPayload {
  target: Target;
  strategy: PatchStrategy;
  /** An object for strategic/merge, a list of RFC 6902 operations for json. */
  patchBody: unknown;
  record: boolean;
  allArtifacts: Artifact[];
  requiredArtifacts: Artifact[];
}

export interface ScalePayload {
  target: Target;
  replicas: number;
}

export interface UndoRolloutPayload {
  target: Target;
  revision?: number;
  numRevisionsBack?: number;
}

export interface TargetPayload {
  target: Target;
}

export interface EnableDisablePayload {
  target: Target;
  loadBalancers?: string[];
}

export interface RunJobPayload {
  manifest: KubeObject;
  application: string;
  namespace?: string;
  requiredArtifacts: Artifact[];
  optionalArtifacts: Artifact[];
  applyMode?: ApplyMode;
}

export interface LiveGetPayload {
  target: Target;
}

/** cleanupArtifacts: the deploy's `outputs.manifests`; versions beyond `max-version-history` are deleted. */
export interface CleanupArtifactsPayload {
  manifests: KubeObject[];
}

export interface LiveListPayload {
  location: string;
  kind: string;
  labelSelector?: string;
  limit?: number;
}

/** Default bound on a live log read: well inside the stream's message limit. */
export const DEFAULT_LOG_LIMIT_BYTES = 4 * 1024 * 1024;

/** Live read of one container's log (Run Job property files); the pod's only container when `container` is unset. */
export interface LiveLogsPayload {
  location: string;
  pod: string;
  container?: string;
  /** Bound on the bytes read (the API server's limitBytes): the log travels back in one stream message. */
  limitBytes: number;
}

export interface PayloadByType {
  deployManifest: DeployPayload;
  deleteManifest: DeletePayload;
  patchManifest: PatchPayload;
  scaleManifest: ScalePayload;
  undoRolloutManifest: UndoRolloutPayload;
  pauseRolloutManifest: TargetPayload;
  resumeRolloutManifest: TargetPayload;
  rollingRestartManifest: TargetPayload;
  enableManifest: EnableDisablePayload;
  disableManifest: EnableDisablePayload;
  runJob: RunJobPayload;
  cleanupArtifacts: CleanupArtifactsPayload;
  liveGet: LiveGetPayload;
  liveList: LiveListPayload;
  liveLogs: LiveLogsPayload;
}

export type OperationType = keyof PayloadByType;

/** The Clouddriver operation names we accept on the REST API (liveGet/liveList/liveLogs are internal). */
export const CLOUDDRIVER_OPERATIONS = [
  'deployManifest',
  'deleteManifest',
  'patchManifest',
  'scaleManifest',
  'undoRolloutManifest',
  'pauseRolloutManifest',
  'resumeRolloutManifest',
  'rollingRestartManifest',
  'enableManifest',
  'disableManifest',
  'runJob',
  'cleanupArtifacts',
] as const satisfies readonly OperationType[];

export type ClouddriverOperation = (typeof CLOUDDRIVER_OPERATIONS)[number];

/** Every operation the agent runs: the Clouddriver ones and the plugin-server's live reads. */
export const OPERATION_TYPES = [
  ...CLOUDDRIVER_OPERATIONS,
  'liveGet',
  'liveList',
  'liveLogs',
] as const satisfies readonly OperationType[];

export function isOperationType(name: string): name is OperationType {
  return (OPERATION_TYPES as readonly string[]).includes(name);
}

export type NormalizedOperation<T extends OperationType = OperationType> = {
  [K in T]: { type: K; account: string; payload: PayloadByType[K] };
}[T];

/** Task phase Clouddriver reports while the operation runs. */
export const OPERATION_PHASES: Record<OperationType, string> = {
  deployManifest: 'DEPLOY_KUBERNETES_MANIFEST',
  deleteManifest: 'DELETE_KUBERNETES_MANIFEST',
  patchManifest: 'PATCH_KUBERNETES_MANIFEST',
  scaleManifest: 'SCALE_KUBERNETES_MANIFEST',
  undoRolloutManifest: 'UNDO_ROLLOUT_KUBERNETES_MANIFEST',
  pauseRolloutManifest: 'PAUSE_ROLLOUT_KUBERNETES_MANIFEST',
  resumeRolloutManifest: 'RESUME_ROLLOUT_KUBERNETES_MANIFEST',
  rollingRestartManifest: 'ROLLING_RESTART_KUBERNETES_MANIFEST',
  enableManifest: 'ENABLE_MANIFEST',
  disableManifest: 'DISABLE_MANIFEST',
  runJob: 'RUN_KUBERNETES_JOB',
  cleanupArtifacts: 'CLEANUP_KUBERNETES_ARTIFACTS',
  liveGet: 'READ_KUBERNETES_MANIFEST',
  liveList: 'READ_KUBERNETES_MANIFEST',
  liveLogs: 'READ_KUBERNETES_LOGS',
};

/** Clouddriver's operation class names, used in task history ("Processing op: ...") and EXCEPTION results. */
export const OPERATION_CLASSES: Record<OperationType, string> = {
  deployManifest: 'KubernetesDeployManifestOperation',
  deleteManifest: 'KubernetesDeleteManifestOperation',
  patchManifest: 'KubernetesPatchManifestOperation',
  scaleManifest: 'KubernetesScaleManifestOperation',
  undoRolloutManifest: 'KubernetesUndoRolloutManifestOperation',
  pauseRolloutManifest: 'KubernetesPauseRolloutManifestOperation',
  resumeRolloutManifest: 'KubernetesResumeRolloutManifestOperation',
  rollingRestartManifest: 'KubernetesRollingRestartManifestOperation',
  enableManifest: 'KubernetesEnableManifestOperation',
  disableManifest: 'KubernetesDisableManifestOperation',
  runJob: 'KubernetesRunJobOperation',
  cleanupArtifacts: 'KubernetesCleanupArtifactsOperation',
  liveGet: 'KubernetesLiveGet',
  liveList: 'KubernetesLiveList',
  liveLogs: 'KubernetesLiveLogs',
};

/** Operations that change nothing when run twice (safe to retry after an agent drops mid-operation). */
export const IDEMPOTENT_OPERATIONS: ReadonlySet<OperationType> = new Set<OperationType>([
  'deployManifest',
  'deleteManifest',
  'scaleManifest',
  'pauseRolloutManifest',
  'resumeRolloutManifest',
  'enableManifest',
  'disableManifest',
  'cleanupArtifacts',
  'liveGet',
  'liveList',
  'liveLogs',
]);
