import type { KubeClient } from './client.js';
import type { ApiResource } from './resources.js';

/**
 * What the API server serves that can be listed and watched, one entry per (group, kind) at the most preferred
 * version serving it. Aggregated discovery (one request for all groups, Kubernetes ≥ 1.30) is tried first; older
 * servers get the classic walk over /api and /apis/<group>/<version>.
 */
export async function discoverResources(client: KubeClient, signal?: AbortSignal): Promise<ApiResource[]> {
  const aggregated = await tryAggregated(client, signal);
  const resources = aggregated ?? (await legacyDiscovery(client, signal));
  return dedupe(resources);
}

const AGGREGATED_ACCEPT =
  'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json';

interface AggregatedList {
  kind?: string;
  items?: {
    metadata?: { name?: string };
    versions?: {
      version: string;
      resources?: {
        resource: string;
        responseKind?: { group?: string; version?: string; kind?: string };
        scope?: string;
        verbs?: string[];
      }[];
    }[];
  }[];
}

async function tryAggregated(client: KubeClient, signal?: AbortSignal): Promise<ApiResource[] | undefined> {
  const out: ApiResource[] = [];
  for (const path of ['/api', '/apis']) {
    const list = await client.getJson<AggregatedList>(path, { accept: AGGREGATED_ACCEPT, signal });
    if (list.kind !== 'APIGroupDiscoveryList') return undefined;
    for (const group of list.items ?? []) {
      const groupName = group.metadata?.name ?? '';
      // Versions come most preferred first; dedupe() keeps the first version seen per kind.
      for (const v of group.versions ?? []) {
        for (const r of v.resources ?? []) {
          if (!r.responseKind?.kind || !watchable(r.verbs)) continue;
          out.push({
            group: groupName,
            version: v.version,
            kind: r.responseKind.kind,
            resource: r.resource,
            namespaced: r.scope === 'Namespaced',
          });
        }
      }
    }
  }
  return out;
}

interface ResourceList {
  groupVersion?: string;
  resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[];
}
interface GroupList {
  groups?: { name: string; preferredVersion?: { version: string }; versions?: { version: string }[] }[];
}

async function legacyDiscovery(client: KubeClient, signal?: AbortSignal): Promise<ApiResource[]> {
  const targets: { group: string; version: string; path: string }[] = [{ group: '', version: 'v1', path: '/api/v1' }];
  const groups = await client.getJson<GroupList>('/apis', { signal });
  for (const g of groups.groups ?? []) {
    const versions = [g.preferredVersion?.version, ...(g.versions ?? []).map((v) => v.version)].filter(
      (v, i, all): v is string => !!v && all.indexOf(v) === i,
    );
    for (const version of versions) targets.push({ group: g.name, version, path: `/apis/${g.name}/${version}` });
  }
  const lists = await mapLimit(targets, 8, async (t) => {
    try {
      return { t, list: await client.getJson<ResourceList>(t.path, { signal }) };
    } catch {
      // An unavailable aggregated API (metrics-server down, ...) must not hide every other group.
      return { t, list: {} as ResourceList };
    }
  });
  const out: ApiResource[] = [];
  for (const { t, list } of lists) {
    for (const r of list.resources ?? []) {
      if (r.name.includes('/') || !watchable(r.verbs)) continue;
      out.push({ group: t.group, version: t.version, kind: r.kind, resource: r.name, namespaced: r.namespaced });
    }
  }
  return out;
}

function watchable(verbs: string[] | undefined): boolean {
  return !!verbs && verbs.includes('list') && verbs.includes('watch');
}

function dedupe(resources: ApiResource[]): ApiResource[] {
  const seen = new Set<string>();
  return resources.filter((r) => {
    const key = `${r.group}/${r.kind}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  });
  await Promise.all(workers);
  return results;
}
