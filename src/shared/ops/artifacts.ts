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

/** Workload kinds whose handlers carry Clouddriver's full replacer list (images, ConfigMaps, Secrets). */
const WORKLOADS = new Set(['Deployment', 'ReplicaSet', 'StatefulSet', 'DaemonSet', 'Job', 'CronJob']);
/** HorizontalPodAutoscaler's scaleTargetRef kinds, as Clouddriver's hpaDeployment/hpaReplicaSet replacers match them. */
const SCALE_TARGETS: Record<string, string> = {
  Deployment: 'kubernetes/deployment',
  deployment: 'kubernetes/deployment',
  ReplicaSet: 'kubernetes/replicaSet',
  replicaSet: 'kubernetes/replicaSet',
};

/**
 * The artifacts a manifest refers to, as Clouddriver's handler for its kind lists them (`listArtifacts`, the
 * manifest's `artifacts` in `GET /manifests`, which Find Artifacts From Resource outputs): what each Replacer's path
 * finds, in the handler's replacer order, as kork Artifacts serialised without nulls (`customKind: false`,
 * `metadata: {}`, no `location`). Workloads: container images (containers, then init containers), then ConfigMaps
 * and Secrets of volumes, projected volumes, envFrom and env. Pods: their containers' images. HPAs: the Deployment or
 * ReplicaSet they scale. Other kinds: none.
 *
 * One deliberate difference (docs/clouddriver-compatibility.md, Manifests): an image's name keeps a registry port
 * (`localhost:5000/web` for `localhost:5000/web`), where Clouddriver cuts at the last colon (`localhost`), a name
 * that would then bind every image of that registry; it is the name bindArtifacts matches on.
 */
export function findArtifacts(manifest: KubeObject): Artifact[] {
  const found: Artifact[] = [];
  const seen = new Set<string>();
  const add = (type: string, reference: unknown, name = reference): void => {
    if (typeof reference !== 'string' || typeof name !== 'string') return;
    const key = `${type}\u0000${name}\u0000${reference}`;
    if (seen.has(key)) return;
    seen.add(key);
    found.push({ type, customKind: false, name, reference, metadata: {} });
  };
  const spec = isObj(manifest.spec) ? manifest.spec : {};
  if (manifest.kind === 'HorizontalPodAutoscaler') {
    const target = isObj(spec.scaleTargetRef) ? spec.scaleTargetRef : {};
    const type = typeof target.kind === 'string' ? SCALE_TARGETS[target.kind] : undefined;
    if (type) add(type, target.name);
    return found;
  }
  if (manifest.kind === 'Pod') {
    for (const c of arrayOf(spec.containers))
      if (typeof c.image === 'string') add('docker/image', c.image, imageName(c.image));
    return found;
  }
  if (!WORKLOADS.has(manifest.kind)) return found;
  const pods = podSpecs(manifest);
  const containers = pods.flatMap((p) => [...arrayOf(p.containers), ...arrayOf(p.initContainers)]);
  for (const c of containers) if (typeof c.image === 'string') add('docker/image', c.image, imageName(c.image));
  const volumes = pods.flatMap((p) => arrayOf(p.volumes));
  const projected = volumes.flatMap((v) => (isObj(v.projected) ? arrayOf(v.projected.sources) : []));
  const sub = (o: Json, key: string): Json => (isObj(o[key]) ? o[key] : {});
  for (const v of volumes) add('kubernetes/configMap', sub(v, 'configMap').name);
  for (const v of volumes) add('kubernetes/secret', sub(v, 'secret').secretName);
  for (const s of projected) add('kubernetes/configMap', sub(s, 'configMap').name);
  for (const s of projected) add('kubernetes/secret', sub(s, 'secret').name);
  const envFrom = containers.flatMap((c) => arrayOf(c.envFrom));
  for (const e of envFrom) add('kubernetes/configMap', sub(e, 'configMapRef').name);
  for (const e of envFrom) add('kubernetes/secret', sub(e, 'secretRef').name);
  const valueFrom = containers.flatMap((c) => arrayOf(c.env)).map((e) => sub(e, 'valueFrom'));
  for (const f of valueFrom) add('kubernetes/configMap', sub(f, 'configMapKeyRef').name);
  for (const f of valueFrom) add('kubernetes/secret', sub(f, 'secretKeyRef').name);
  return found;
}
