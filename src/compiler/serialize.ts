import { emitYaml } from './yaml-emit.js';

export type Obj = Record<string, unknown>;

const TOP_ORDER = ['apiVersion', 'kind', 'metadata'];

/**
 * Keys sorted so output never depends on construction order: apiVersion/kind/metadata first at the top, `name`
 * first in nested maps (list items read as "- name: ..."), everything else alphabetical.
 */
export function canonical(value: unknown, top = true): unknown {
  if (Array.isArray(value)) return value.map((v) => canonical(v, false));
  if (value === null || typeof value !== 'object') return value;
  const keys = Object.keys(value as Obj).sort((a, b) => rank(a, top) - rank(b, top) || (a < b ? -1 : a > b ? 1 : 0));
  const out: Obj = {};
  for (const k of keys) {
    const v = (value as Obj)[k];
    if (v !== undefined) out[k] = canonical(v, false);
  }
  return out;
}

function rank(key: string, top: boolean): number {
  if (top) {
    const i = TOP_ORDER.indexOf(key);
    return i < 0 ? TOP_ORDER.length : i;
  }
  return key === 'name' ? 0 : 1;
}

export function toYaml(value: unknown): string {
  return emitYaml(canonical(value));
}

export function toYamlDocuments(values: unknown[]): string {
  return values.map((v) => toYaml(v)).join('---\n');
}

export function toJsonText(value: unknown): string {
  return JSON.stringify(canonical(value), null, 2) + '\n';
}

/** Apply order: namespaces, identities and RBAC, config, then what uses them. */
const KIND_ORDER = [
  'Namespace',
  'ServiceAccount',
  'ClusterRole',
  'ClusterRoleBinding',
  'Role',
  'RoleBinding',
  'ConfigMap',
  'Secret',
  'Certificate',
  'Service',
  'Deployment',
];

export function sortForApply(objs: Obj[]): Obj[] {
  const key = (o: Obj): [number, string, string] => {
    const m = (o.metadata ?? {}) as Obj;
    const i = KIND_ORDER.indexOf(String(o.kind));
    return [i < 0 ? KIND_ORDER.length : i, String(m.namespace ?? ''), String(m.name ?? '')];
  };
  return [...objs].sort((a, b) => {
    const ka = key(a);
    const kb = key(b);
    return (
      ka[0] - kb[0] || (ka[1] < kb[1] ? -1 : ka[1] > kb[1] ? 1 : 0) || (ka[2] < kb[2] ? -1 : ka[2] > kb[2] ? 1 : 0)
    );
  });
}
