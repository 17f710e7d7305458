import { ANNOTATIONS } from '../../shared/ops/spinnaker.js';

type Obj = Record<string, unknown>;

/** Spinnaker's naming of an object: which application, cluster and version it belongs to. */
export interface Moniker {
  app: string;
  cluster: string;
  stack?: string;
  detail?: string;
  sequence?: number;
}

/**
 * Frigga's parse of a name as Clouddriver uses it for Kubernetes: the cluster is the name without a `-vNNN` version
 * (exactly three digits), the app is what precedes the first '-'. Frigga's stack and detail are not used (they come
 * from annotations only). A name Frigga cannot parse (characters outside its alphabet) gives no app.
 */
export function friggaName(name: string): { app: string; cluster: string; sequence?: number } {
  const push = /^([-a-zA-Z0-9._~^]*)-v([0-9]{3})$/.exec(name);
  const cluster = push ? push[1]! : name;
  const app = /^([a-zA-Z0-9._]+)(?:-|$)/.exec(cluster)?.[1];
  if (!app || !/^[-a-zA-Z0-9._~^]*$/.test(cluster)) return { app: '', cluster: '' };
  return { app, cluster, ...(push ? { sequence: Number(push[2]) } : {}) };
}

export function annotationsOf(manifest: Obj): Record<string, string> {
  const metadata = manifest.metadata;
  if (typeof metadata !== 'object' || metadata === null) return {};
  const a = (metadata as Obj).annotations;
  return typeof a === 'object' && a !== null && !Array.isArray(a) ? (a as Record<string, string>) : {};
}

/**
 * Clouddriver's moniker of a manifest (KubernetesManifestAnnotater.getMoniker): app and cluster from the
 * `moniker.spinnaker.io/*` annotations, else parsed from the name; stack and detail from the annotations only;
 * sequence from its annotation, else a ReplicaSet's `deployment.kubernetes.io/revision`, else the parsed version.
 */
export function moniker(kind: string, manifest: Obj): Moniker {
  const annotations = annotationsOf(manifest);
  const metadata = (manifest.metadata ?? {}) as Obj;
  const name = typeof metadata.name === 'string' ? metadata.name : '';
  const parsed = friggaName(name);
  const m: Moniker = {
    app: annotations[ANNOTATIONS.application] || parsed.app,
    cluster: annotations[ANNOTATIONS.cluster] || parsed.cluster,
  };
  if (annotations[ANNOTATIONS.stack]) m.stack = annotations[ANNOTATIONS.stack];
  if (annotations[ANNOTATIONS.detail]) m.detail = annotations[ANNOTATIONS.detail];
  const sequence =
    annotations[ANNOTATIONS.sequence] ??
    (kind === 'ReplicaSet' ? annotations[ANNOTATIONS.deploymentRevision] : undefined);
  if (sequence !== undefined && /^\d+$/.test(sequence)) m.sequence = Number(sequence);
  else if (parsed.sequence !== undefined) m.sequence = parsed.sequence;
  return m;
}
