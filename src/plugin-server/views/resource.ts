import { kindRow, type SpinnakerCategory } from '../../shared/kinds.js';
import { canonicalKindName } from './kinds.js';
import type { CachedObject } from '../cache/store.js';
import { monikerOf } from '../../shared/ops/spinnaker.js';
import type { KubeObject, Moniker } from '../../shared/ops/types.js';

export type Obj = Record<string, unknown>;

/** One cached object, parsed once, with what every view derives from it. */
export interface Resource {
  readonly o: CachedObject;
  readonly manifest: Obj;
  /** Clouddriver's kind name ("replicaSet"). */
  readonly kindName: string;
  /** "replicaSet backend-v014": how Clouddriver names objects in paths and JSON. */
  readonly fullName: string;
  readonly moniker: Moniker;
  readonly category: SpinnakerCategory | 'unclassified';
  readonly uid: string;
}

export function obj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

export function arr(v: unknown): Obj[] {
  return Array.isArray(v) ? v.filter((x): x is Obj => obj(x) !== undefined) : [];
}

export function toResource(o: CachedObject): Resource {
  const manifest = JSON.parse(o.json) as Obj;
  // List items come without apiVersion and kind, and Secrets as PartialObjectMetadata: show the object's own type.
  manifest.apiVersion = o.apiVersion;
  manifest.kind = o.kind;
  const kindName = canonicalKindName(o.group, o.kind);
  return {
    o,
    manifest,
    kindName,
    fullName: `${kindName} ${o.name}`,
    moniker: monikerOf(manifest as unknown as KubeObject),
    category: kindRow(o.group, o.kind)?.clouddriver?.category ?? 'unclassified',
    uid: o.uid,
  };
}

export function labelsOf(r: Resource): Record<string, string> {
  return (obj(obj(r.manifest.metadata)?.labels) ?? {}) as Record<string, string>;
}

/** metadata.creationTimestamp in ms, undefined when absent or unparsable (then left out, as Clouddriver omits nulls). */
export function createdTime(r: Resource): number | undefined {
  const t = obj(r.manifest.metadata)?.creationTimestamp;
  if (typeof t !== 'string') return undefined;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? undefined : ms;
}

/** The fields every Kubernetes model of Clouddriver carries (its ManifestBasedModel). */
export function baseFields(r: Resource): Obj {
  const created = createdTime(r);
  return {
    name: r.fullName,
    displayName: r.o.name,
    account: r.o.account,
    namespace: r.o.namespace,
    region: r.o.namespace,
    kind: r.kindName,
    apiVersion: r.o.apiVersion,
    labels: labelsOf(r),
    moniker: r.moniker,
    ...(created !== undefined ? { createdTime: created } : {}),
    cloudProvider: 'kubernetes',
  };
}
