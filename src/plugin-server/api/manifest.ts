import type { CachedObject } from '../cache/store.js';
import { arr, obj, toResource, type Obj } from '../views/resource.js';
import { manifestStatus, type ManifestStatus } from './status.js';
import type { Moniker } from '../../shared/ops/types.js';

export interface Artifact {
  type: string;
  name: string;
  reference: string;
  location?: string;
}

/** Clouddriver's KubernetesManifestContainer (docs/clouddriver-compatibility.md, Manifests). */
export interface ManifestContainer {
  account: string;
  name: string;
  location: string;
  moniker: Moniker;
  manifest: Obj;
  status: ManifestStatus;
  artifacts: Artifact[];
  events: unknown[];
  warnings: unknown[];
  metrics: unknown[];
}

function podSpecOf(kind: string, manifest: Obj): Obj | undefined {
  const spec = obj(manifest.spec);
  if (!spec) return undefined;
  if (kind === 'Pod') return spec;
  if (kind === 'CronJob') return obj(obj(obj(obj(spec.jobTemplate)?.spec)?.template)?.spec);
  return obj(obj(spec.template)?.spec);
}

/** Images, ConfigMaps and Secrets the workload references (Clouddriver's replacers, the read side of them). */
export function artifacts(kind: string, namespace: string, manifest: Obj): Artifact[] {
  const podSpec = podSpecOf(kind, manifest);
  if (!podSpec) return [];
  const out = new Map<string, Artifact>();
  const add = (a: Artifact) => out.set(`${a.type}\u0000${a.reference}`, a);
  const containers = [...arr(podSpec.initContainers), ...arr(podSpec.containers)];
  for (const c of containers) {
    if (typeof c.image === 'string') {
      const image = c.image;
      const at = image.indexOf('@');
      const lastSlash = image.lastIndexOf('/');
      const colon = image.lastIndexOf(':');
      const name = at >= 0 ? image.slice(0, at) : colon > lastSlash ? image.slice(0, colon) : image;
      add({ type: 'docker/image', name, reference: image });
    }
    for (const e of arr(c.envFrom)) {
      const cm = obj(e.configMapRef)?.name;
      if (typeof cm === 'string') add({ type: 'kubernetes/configMap', name: cm, reference: cm, location: namespace });
      const sec = obj(e.secretRef)?.name;
      if (typeof sec === 'string') add({ type: 'kubernetes/secret', name: sec, reference: sec, location: namespace });
    }
    for (const e of arr(c.env)) {
      const from = obj(e.valueFrom);
      const cm = obj(from?.configMapKeyRef)?.name;
      if (typeof cm === 'string') add({ type: 'kubernetes/configMap', name: cm, reference: cm, location: namespace });
      const sec = obj(from?.secretKeyRef)?.name;
      if (typeof sec === 'string') add({ type: 'kubernetes/secret', name: sec, reference: sec, location: namespace });
    }
  }
  for (const v of arr(podSpec.volumes)) {
    const cm = obj(v.configMap)?.name;
    if (typeof cm === 'string') add({ type: 'kubernetes/configMap', name: cm, reference: cm, location: namespace });
    const sec = obj(v.secret)?.secretName;
    if (typeof sec === 'string') add({ type: 'kubernetes/secret', name: sec, reference: sec, location: namespace });
    for (const s of arr(obj(v.projected)?.sources)) {
      const pcm = obj(s.configMap)?.name;
      if (typeof pcm === 'string')
        add({ type: 'kubernetes/configMap', name: pcm, reference: pcm, location: namespace });
      const psec = obj(s.secret)?.name;
      if (typeof psec === 'string')
        add({ type: 'kubernetes/secret', name: psec, reference: psec, location: namespace });
    }
  }
  return [...out.values()];
}

export function manifestContainer(o: CachedObject): ManifestContainer {
  // One parse, as the views make it (apiVersion and kind set from the cache: Secrets come as metadata only).
  const r = toResource(o);
  return {
    account: o.account,
    name: r.fullName,
    location: o.namespace,
    moniker: r.moniker,
    manifest: r.manifest,
    status: manifestStatus(o.group, o.kind, r.manifest),
    artifacts: artifacts(o.kind, o.namespace, r.manifest),
    events: [],
    warnings: [],
    metrics: [],
  };
}
