import type { Obj } from './serialize.js';

/**
 * The few Kustomize transformations a generated overlay uses, applied in Kustomize's order (patches, namespace,
 * name suffix with name-reference fix-up, labels with selectors). Synth renders manifests through this so that
 * `manifests/<place>.yaml` and `kustomize build overlays/<place>` are the same objects; an integration test
 * holds the two to each other with the real kustomize.
 */
export interface WorkloadTransform {
  namespace: string;
  nameSuffix: string;
  labels: Record<string, string>;
  /** Strategic-merge patches, each naming its target by kind and base name. */
  patches: Obj[];
}

export function applyWorkloadTransform(resources: Obj[], t: WorkloadTransform): Obj[] {
  let objs = resources.map((o) => structuredClone(o));
  for (const patch of t.patches) {
    const m = patch.metadata as Obj;
    const i = objs.findIndex((o) => o.kind === patch.kind && (o.metadata as Obj).name === m.name);
    if (i < 0) throw new Error(`patch target ${String(patch.kind)}/${String(m.name)} not in resources`);
    objs[i] = strategicMerge(objs[i] as Obj, patch) as Obj;
  }
  const renamed = new Map<string, string>();
  objs = objs.map((o) => {
    const meta = o.metadata as Obj;
    const name = String(meta.name);
    if (t.nameSuffix) renamed.set(`${String(o.kind)}/${name}`, `${name}${t.nameSuffix}`);
    return {
      ...o,
      metadata: {
        ...meta,
        ...(t.nameSuffix ? { name: `${name}${t.nameSuffix}` } : {}),
        namespace: t.namespace,
        labels: { ...((meta.labels as Record<string, string>) ?? {}), ...t.labels },
      },
    };
  });
  const ref = (kind: string, name: unknown): unknown =>
    typeof name === 'string' ? (renamed.get(`${kind}/${name}`) ?? name) : name;
  for (const o of objs) {
    const spec = o.spec as Obj | undefined;
    if (o.kind === 'Deployment' && spec) {
      (spec.selector as Obj).matchLabels = { ...((spec.selector as Obj).matchLabels as Obj), ...t.labels };
      const tmpl = spec.template as Obj;
      const tmeta = (tmpl.metadata ?? {}) as Obj;
      tmpl.metadata = { ...tmeta, labels: { ...((tmeta.labels as Obj) ?? {}), ...t.labels } };
      const pod = tmpl.spec as Obj;
      if (pod.serviceAccountName !== undefined) pod.serviceAccountName = ref('ServiceAccount', pod.serviceAccountName);
      for (const v of (pod.volumes as Obj[] | undefined) ?? []) {
        if (v.configMap) (v.configMap as Obj).name = ref('ConfigMap', (v.configMap as Obj).name);
        if (v.secret) (v.secret as Obj).secretName = ref('Secret', (v.secret as Obj).secretName);
      }
      for (const c of (pod.containers as Obj[] | undefined) ?? []) {
        for (const e of (c.env as Obj[] | undefined) ?? []) {
          const from = e.valueFrom as Obj | undefined;
          if (from?.secretKeyRef) (from.secretKeyRef as Obj).name = ref('Secret', (from.secretKeyRef as Obj).name);
          if (from?.configMapKeyRef) {
            (from.configMapKeyRef as Obj).name = ref('ConfigMap', (from.configMapKeyRef as Obj).name);
          }
        }
      }
    }
    if (o.kind === 'Service' && spec?.selector) spec.selector = { ...(spec.selector as Obj), ...t.labels };
  }
  return objs;
}

/** Merge keys of the Kubernetes lists our patches touch (from the API's patchMergeKey tags). */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  volumes: 'name',
  env: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
};

/** Strategic merge as Kustomize does it: maps merge, keyed lists merge by key (`$patch: delete` removes), other lists replace. */
export function strategicMerge(base: unknown, patch: unknown, field = ''): unknown {
  if (Array.isArray(patch)) {
    const key = MERGE_KEYS[field];
    if (!key || !Array.isArray(base)) return structuredClone(patch);
    // Kustomize (kyaml) lists the patch's elements first, in patch order (merged with their originals), then the
    // original elements the patch does not mention.
    const mentioned = new Set((patch as Obj[]).map((item) => item[key]));
    const first: Obj[] = [];
    for (const item of patch as Obj[]) {
      if (item.$patch === 'delete') continue;
      const orig = (base as Obj[]).find((x) => x[key] === item[key]);
      first.push(orig ? (strategicMerge(orig, item) as Obj) : structuredClone(item));
    }
    return [...first, ...(base as Obj[]).filter((x) => !mentioned.has(x[key])).map((x) => structuredClone(x))];
  }
  if (patch === null || typeof patch !== 'object') return patch;
  if (base === null || typeof base !== 'object' || Array.isArray(base)) return structuredClone(patch);
  const out: Obj = { ...(base as Obj) };
  for (const [k, v] of Object.entries(patch as Obj)) {
    if (v === null) delete out[k];
    else out[k] = strategicMerge((base as Obj)[k], v, k);
  }
  return out;
}
