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

/** The resources an account caches, from everything discovery found. */
export function selectResources(account: AccountConfig, discovered: readonly ApiResource[]): ApiResource[] {
  const namespacedOnly = account.onlyNamespacedResources || account.namespaces.length > 0;
  return discovered.filter((r) => {
    if (namespacedOnly && !r.namespaced) return false;
    if (account.kinds.length > 0 && !account.kinds.some((k) => kindMatches(k, r))) return false;
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
