import { KINDS } from '../shared/kinds.js';
import type { AccountConfig } from './config.js';
import type { ApiResource } from './kube/resources.js';

/**
 * Whether a kinds/omitKinds entry names a resource: "Deployment" matches the kind in every group,
 * "Deployment.apps" only in that group. Case-insensitive, so Armory-style "replicaSet" still works.
 */
export function kindMatches(entry: string, r: Pick<ApiResource, 'group' | 'kind'>): boolean {
  const dot = entry.indexOf('.');
  const kind = dot < 0 ? entry : entry.slice(0, dot);
  if (kind.toLowerCase() !== r.kind.toLowerCase()) return false;
  return dot < 0 || entry.slice(dot + 1).toLowerCase() === r.group.toLowerCase();
}

/**
 * The kinds an account without `kinds` caches: the kinds table's `cachedByDefault` rows (Clouddriver's built-in
 * kinds Spinnaker shows, the same set the compiler grants RBAC for), matched by group and kind. Leases,
 * EndpointSlices, webhooks and the like are not Spinnaker's business and would multiply API-server and stream load
 * per cluster. Custom resources are cached when the account lists them in `customResources`.
 */
export const DEFAULT_KINDS: ReadonlySet<string> = new Set(
  KINDS.filter((r) => r.rbac.cachedByDefault).map((r) => `${r.kind}.${r.group}`),
);

const isDefaultKind = (r: Pick<ApiResource, 'group' | 'kind'>): boolean => DEFAULT_KINDS.has(`${r.kind}.${r.group}`);

/** The plugin-server's kind policy (Welcome.cacheKinds / cacheOmitKinds). */
export interface KindPolicy {
  /** Not empty: replaces the default kinds of accounts that list no kinds. */
  cacheKinds: string[];
  /** Never cached, by any account. */
  cacheOmitKinds: string[];
}

/** The resources an account caches, from everything discovery found. */
export function selectResources(
  account: AccountConfig,
  discovered: readonly ApiResource[],
  policy?: KindPolicy,
): ApiResource[] {
  const namespacedOnly = account.onlyNamespacedResources || account.namespaces.length > 0;
  const custom = account.customResources ?? [];
  const serverDefault = policy?.cacheKinds ?? [];
  const isDefault = (r: ApiResource): boolean =>
    serverDefault.length > 0 ? serverDefault.some((k) => kindMatches(k, r)) : isDefaultKind(r);
  return discovered.filter((r) => {
    if (namespacedOnly && !r.namespaced) return false;
    if (policy?.cacheOmitKinds.some((k) => kindMatches(k, r))) return false;
    if (account.kinds.length > 0) {
      if (!account.kinds.some((k) => kindMatches(k, r))) return false;
    } else if (!isDefault(r) && !custom.some((k) => kindMatches(k, r))) {
      return false;
    }
    if (account.omitKinds.some((k) => kindMatches(k, r))) return false;
    return true;
  });
}

/** The namespaces one watch of `r` covers: one watch per listed namespace, else one cluster-wide (''). */
export function watchNamespaces(account: AccountConfig, r: ApiResource): string[] {
  return r.namespaced && account.namespaces.length > 0 ? [...account.namespaces] : [''];
}

/**
 * Server-side filter for omitNamespaces (`metadata.namespace!=a,metadata.namespace!=b`), which every resource
 * supports, so objects of omitted namespaces are not even sent to the agent.
 */
export function omitNamespacesSelector(account: AccountConfig, r: ApiResource): string | undefined {
  if (!r.namespaced || account.omitNamespaces.length === 0) return undefined;
  return account.omitNamespaces.map((ns) => `metadata.namespace!=${ns}`).join(',');
}
