import { KINDS } from '../shared/kinds.js';

/**
 * The compiler's view of the kinds table (`src/shared/kinds.ts`): what RBAC an account caching a kind needs.
 */
export interface KindInfo {
  kind: string;
  group: string;
  resource: string;
  namespaced: boolean;
  /** Spinnaker deploys it (create/update/patch/delete for read-write accounts). */
  deployable: boolean;
  /** Subresources a read-write account needs for operations (scale, rollback, restart, logs). */
  writeSubresources?: string[];
  readSubresources?: string[];
}

export const BUILTIN_KINDS: readonly KindInfo[] = KINDS.map((r) => ({
  kind: r.kind,
  group: r.group,
  resource: r.resource,
  namespaced: r.namespaced,
  ...r.rbac,
}));

const BY_NAME = new Map(BUILTIN_KINDS.map((k) => [k.kind.toLowerCase(), k]));

/** Cached when an account lists no `kinds`. */
export const DEFAULT_KINDS: readonly string[] = KINDS.filter((r) => r.rbac.cachedByDefault).map((r) => r.kind);

export function lookupKind(name: string): KindInfo | undefined {
  return BY_NAME.get(name.toLowerCase());
}

/**
 * `Kind.group` names a custom resource. RBAC needs its plural; it is derived by the English rules the API server's
 * own default (`kubectl api-resources`) uses for nearly every CRD: `y` → `ies`, `s|x|ch|sh` → `+es`, else `+s`.
 */
export function customKind(name: string): KindInfo | undefined {
  const dot = name.indexOf('.');
  if (dot <= 0) return undefined;
  const kind = name.slice(0, dot);
  const group = name.slice(dot + 1);
  const lower = kind.toLowerCase();
  const resource = /[^aeiou]y$/.test(lower)
    ? `${lower.slice(0, -1)}ies`
    : /(s|x|ch|sh)$/.test(lower)
      ? `${lower}es`
      : `${lower}s`;
  return { kind, group, resource, namespaced: true, deployable: true };
}

export function resolveKind(name: string): KindInfo | undefined {
  return name.includes('.') ? customKind(name) : lookupKind(name);
}
