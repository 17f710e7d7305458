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

/** canonical()'s key order, for the emitter to apply while it writes (no sorted copy of every object). */
function canonicalOrder(keys: string[], top: boolean): string[] {
  if (!top) {
    const i = keys.indexOf('name');
    if (i < 0) return keys.sort();
    keys.splice(i, 1);
    keys.sort().unshift('name');
    return keys;
  }
  const head = TOP_ORDER.filter((k) => keys.includes(k));
  return head.length === 0 ? keys.sort() : [...head, ...keys.filter((k) => !TOP_ORDER.includes(k)).sort()];
}

export function toYaml(value: unknown): string {
  return emitYaml(value, canonicalOrder);
}

/**
 * Documents separated by `---`. With `memo`, an object already written (the same object in a place's manifest and in
 * its overlay) is not written again.
 */
export function toYamlDocuments(values: unknown[], memo?: WeakMap<object, string>): string {
  return values.map((v) => cachedYaml(v, memo)).join('---\n');
}

function cachedYaml(v: unknown, memo: WeakMap<object, string> | undefined): string {
  if (!memo || v === null || typeof v !== 'object') return toYaml(v);
  let text = memo.get(v);
  if (text === undefined) {
    text = toYaml(v);
    memo.set(v, text);
  }
  return text;
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
