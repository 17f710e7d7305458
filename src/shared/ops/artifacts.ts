import type { Artifact, KubeObject } from './types.js';

/**
 * Artifact binding as Clouddriver's replacers do it: a `docker/image` artifact replaces every container image
 * whose name without tag or digest equals the artifact's name; `kubernetes/configMap` and `kubernetes/secret`
 * artifacts (from this deploy or the request) replace references to the unversioned name in the same namespace.
 * Pure: returns a new manifest and what was bound.
 */
export interface BindResult {
  manifest: KubeObject;
  bound: Artifact[];
}

type Json = Record<string, unknown>;

export function bindArtifacts(manifest: KubeObject, artifacts: readonly Artifact[]): BindResult {
  const out = structuredClone(manifest);
  const bound = new Map<string, Artifact>();
  const mark = (a: Artifact): void => {
    bound.set(artifactKey(a), a);
  };
  const namespace = out.metadata.namespace ?? '';
  for (const pod of podSpecs(out)) {
    for (const c of containersOf(pod)) {
      if (typeof c.image !== 'string') continue;
      const a = artifacts.find((x) => x.type === 'docker/image' && x.name && imageName(c.image as string) === x.name);
      if (a?.reference) {
        c.image = a.reference;
        mark(a);
      }
    }
    const replaceRef = (type: 'kubernetes/configMap' | 'kubernetes/secret', holder: Json, key: string): void => {
      const current = holder[key];
      if (typeof current !== 'string') return;
      const a = artifacts.find((x) => x.type === type && x.name === current && (x.location ?? '') === namespace);
      if (a?.reference) {
        holder[key] = a.reference;
        mark(a);
      }
    };
    for (const v of arrayOf(pod.volumes)) {
      if (isObj(v.configMap)) replaceRef('kubernetes/configMap', v.configMap, 'name');
      if (isObj(v.secret)) replaceRef('kubernetes/secret', v.secret, 'secretName');
      if (isObj(v.projected)) {
        for (const s of arrayOf(v.projected.sources)) {
          if (isObj(s.configMap)) replaceRef('kubernetes/configMap', s.configMap, 'name');
          if (isObj(s.secret)) replaceRef('kubernetes/secret', s.secret, 'name');
        }
      }
    }
    for (const c of containersOf(pod)) {
      for (const e of arrayOf(c.envFrom)) {
        if (isObj(e.configMapRef)) replaceRef('kubernetes/configMap', e.configMapRef, 'name');
        if (isObj(e.secretRef)) replaceRef('kubernetes/secret', e.secretRef, 'name');
      }
      for (const e of arrayOf(c.env)) {
        if (!isObj(e.valueFrom)) continue;
        if (isObj(e.valueFrom.configMapKeyRef)) replaceRef('kubernetes/configMap', e.valueFrom.configMapKeyRef, 'name');
        if (isObj(e.valueFrom.secretKeyRef)) replaceRef('kubernetes/secret', e.valueFrom.secretKeyRef, 'name');
      }
    }
  }
  return { manifest: out, bound: [...bound.values()] };
}

/** Artifacts in `required` that are not in `bound` (same type, name and location). */
export function unboundArtifacts(required: readonly Artifact[], bound: readonly Artifact[]): Artifact[] {
  const keys = new Set(bound.map(artifactKey));
  return required.filter((a) => !keys.has(artifactKey(a)));
}

export const artifactKey = (a: Artifact): string => `[${a.type}]-[${a.name ?? ''}]-[${a.location ?? ''}]`;

/** "ghcr.io/acme/web" for "ghcr.io/acme/web:1.4.2", "...@sha256:..." or "localhost:5000/web:1". */
export function imageName(image: string): string {
  const at = image.indexOf('@');
  const noDigest = at < 0 ? image : image.slice(0, at);
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

/** Every pod spec inside a manifest: a Pod's spec, a workload's template, a CronJob's job template. */
export function podSpecs(obj: KubeObject): Json[] {
  const spec = obj.spec;
  if (!isObj(spec)) return [];
  if (obj.kind === 'Pod') return [spec];
  const out: Json[] = [];
  if (isObj(spec.template) && isObj(spec.template.spec)) out.push(spec.template.spec);
  if (isObj(spec.jobTemplate) && isObj(spec.jobTemplate.spec)) {
    const t = spec.jobTemplate.spec.template;
    if (isObj(t) && isObj(t.spec)) out.push(t.spec);
  }
  return out;
}

function containersOf(pod: Json): Json[] {
  return [...arrayOf(pod.initContainers), ...arrayOf(pod.containers), ...arrayOf(pod.ephemeralContainers)];
}

function arrayOf(v: unknown): Json[] {
  return Array.isArray(v) ? v.filter(isObj) : [];
}

function isObj(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
