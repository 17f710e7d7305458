import { fullResourceName, spinnakerKind } from './kinds.js';
import { OPERATION_CLASSES, type Artifact, type KubeObject, type OperationType } from './types.js';

/**
 * Result objects in Clouddriver's shapes (`K8S/op/OperationResult.java`, kork's ExceptionSummary). Null fields are
 * left out, as Clouddriver's NON_NULL mapper does. Orca waits forever on a deploy, delete or patch task without one
 * of these in `resultObjects`, so every builder returns a complete object even when nothing was touched.
 */
export interface OperationResultObject {
  manifestNamesByNamespace: Record<string, string[]>;
  manifests?: KubeObject[];
  createdArtifacts?: Artifact[];
  boundArtifacts?: Artifact[];
}

export interface RunJobResultObject extends OperationResultObject {
  deployedNamesByLocation: Record<string, string[]>;
}

export interface ExceptionResultObject {
  type: 'EXCEPTION';
  operation: string;
  message: string;
  cause: string;
  details: { message: string; userMessage?: string; retryable?: boolean }[];
  retryable?: boolean;
}

type Named = { apiVersion?: string; kind?: string; metadata?: { name?: string; namespace?: string } };

/** `{"shop": ["configMap web-cfg-v000", "deployment web"], "": ["namespace shop"]}` */
export function manifestNamesByNamespace(objects: readonly Named[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const o of objects) (out[o.metadata?.namespace ?? ''] ??= []).push(fullResourceName(o));
  return out;
}

/** Secrets never leave the agent with their data. */
export function redactSecret<T extends KubeObject>(obj: T): T {
  if (obj.kind !== 'Secret' || (obj.apiVersion !== 'v1' && obj.apiVersion !== '')) return obj;
  const { data: _data, stringData: _stringData, ...rest } = obj;
  const annotations = obj.metadata.annotations;
  if (annotations && 'kubectl.kubernetes.io/last-applied-configuration' in annotations) {
    const { 'kubectl.kubernetes.io/last-applied-configuration': _lac, ...kept } = annotations;
    return { ...rest, metadata: { ...obj.metadata, annotations: kept } } as T;
  }
  return rest as T;
}

export function deployResult(input: {
  manifests: readonly KubeObject[];
  createdArtifacts: readonly Artifact[];
  boundArtifacts: readonly Artifact[];
}): OperationResultObject {
  const manifests = input.manifests.map(redactSecret);
  return {
    manifestNamesByNamespace: manifestNamesByNamespace(manifests),
    manifests,
    createdArtifacts: [...input.createdArtifacts],
    boundArtifacts: [...input.boundArtifacts],
  };
}

/** Delete answers with the names it deleted (an empty list for a namespace where nothing matched). */
export function deleteResult(deleted: readonly Named[], location: string): OperationResultObject {
  const names = manifestNamesByNamespace(deleted);
  if (Object.keys(names).length === 0) names[location] = [];
  return { manifestNamesByNamespace: names };
}

/** Patch reports a stub of the target, not the patched object. */
export function patchResult(
  target: { apiVersion: string; kind: string; name: string; namespace: string },
  boundArtifacts: readonly Artifact[],
): OperationResultObject {
  const stub: KubeObject = {
    apiVersion: target.apiVersion,
    kind: target.kind,
    metadata: { name: target.name, namespace: target.namespace },
  };
  return {
    manifestNamesByNamespace: {
      [target.namespace]: [`${spinnakerKind(target.apiVersion, target.kind)} ${target.name}`],
    },
    manifests: [stub],
    boundArtifacts: [...boundArtifacts],
    createdArtifacts: [],
  };
}

export function runJobResult(deployed: OperationResultObject): RunJobResultObject {
  return { ...deployed, deployedNamesByLocation: deployed.manifestNamesByNamespace };
}

/** The `{"type":"EXCEPTION"}` entry a failed task carries; Orca shows its `message`. */
export function exceptionResult(
  type: OperationType,
  message: string,
  opts: { cause?: string; retryable?: boolean } = {},
): ExceptionResultObject {
  const out: ExceptionResultObject = {
    type: 'EXCEPTION',
    operation: OPERATION_CLASSES[type],
    message,
    cause: opts.cause ?? message,
    details: [{ message, ...(opts.retryable === undefined ? {} : { retryable: opts.retryable }) }],
  };
  if (opts.retryable !== undefined) out.retryable = opts.retryable;
  return out;
}

/**
 * Key of one touched object in `OperationResult.resource_versions`: `<apiVersion>/<kind>/<namespace>/<name>`,
 * e.g. `apps/v1/Deployment/shop/web` or `v1/Namespace//shop`. The value is the resourceVersion the API server
 * returned, or '' when the object is gone (the cache must not hold it any more).
 */
export function resourceKey(obj: Named): string {
  return `${obj.apiVersion ?? ''}/${obj.kind ?? ''}/${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
}

export function parseResourceKey(key: string): { apiVersion: string; kind: string; namespace: string; name: string } {
  const parts = key.split('/');
  const name = parts.pop() ?? '';
  const namespace = parts.pop() ?? '';
  const kind = parts.pop() ?? '';
  return { apiVersion: parts.join('/'), kind, namespace, name };
}
