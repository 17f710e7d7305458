import { ScaleAgentError } from '../../shared/errors.js';
import { groupOf, NATIVE_GROUPS, parseKind } from '../../shared/ops/kinds.js';
import type { ApiResource } from './resources.js';

/** One REST resource as discovery reports it: every verb, at every served version. */
export interface DiscoveredResource extends ApiResource {
  verbs: string[];
  /** True at the group's preferred version. */
  preferred: boolean;
}

/** What discovery needs from a client: a JSON GET. */
export type DiscoveryFetch = <T>(path: string, options: { accept?: string; signal?: AbortSignal }) => Promise<T>;

/** Concurrent requests of the legacy walk: a cluster with 80 API groups must not get 80 requests at once. */
const LEGACY_CONCURRENCY = 8;
/** A miss refreshes at most this often, so asking for a kind that does not exist cannot hammer the API server. */
const MISS_REFRESH_MS = 500;

/**
 * What one API server serves, for the watches (listable and watchable kinds at their preferred version) and for
 * operations (any verb, any served version, Clouddriver kind names): one cache per cluster. Aggregated discovery
 * (one request for all groups, Kubernetes ≥ 1.30) is tried first; older servers get the classic walk over /api and
 * /apis/<group>/<version>, with bounded concurrency. A lookup that misses refreshes once — a CRD deployed a moment
 * ago becomes resolvable — and `refresh()` is what the account's CRD watch calls when CRDs appear or disappear.
 */
export class Discovery {
  private resources: DiscoveredResource[] | undefined;
  private loading: Promise<DiscoveredResource[]> | undefined;
  private loadedAt = 0;

  constructor(
    private readonly fetch: DiscoveryFetch,
    private readonly now: () => number = Date.now,
  ) {}

  async all(signal?: AbortSignal): Promise<DiscoveredResource[]> {
    return this.resources ?? this.refresh(signal);
  }

  /** Reloads; concurrent callers share one load. */
  refresh(signal?: AbortSignal): Promise<DiscoveredResource[]> {
    this.loading ??= this.load(signal).finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** Listable and watchable kinds, one per (group, kind) at its preferred version — what accounts watch. Fresh. */
  async watchable(signal?: AbortSignal): Promise<ApiResource[]> {
    return watchableOf(await this.refresh(signal));
  }

  /** The resource serving `apiVersion`/`kind` exactly. */
  async forManifest(apiVersion: string, kind: string, signal?: AbortSignal): Promise<DiscoveredResource> {
    const group = groupOf(apiVersion);
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    const find = (list: DiscoveredResource[]): DiscoveredResource | undefined =>
      list.find((r) => r.group === group && r.version === version && r.kind === kind);
    const hit = find(await this.all(signal)) ?? find(await this.refreshIfStale(signal));
    if (!hit) throw new ScaleAgentError('NOT_FOUND', `the API server does not serve kind ${kind} in ${apiVersion}`);
    return hit;
  }

  /** The resource a Clouddriver kind name means ("deployment", "rs", "CronTab.stable.example.com"), preferred version. */
  async forKindName(kindName: string, signal?: AbortSignal): Promise<DiscoveredResource> {
    const ref = parseKind(kindName);
    const find = (list: DiscoveredResource[]): DiscoveredResource | undefined => {
      const candidates = list.filter((r) => {
        if (ref.known) return r.group === ref.known.group && r.kind === ref.known.kind;
        if (r.kind.toLowerCase() !== ref.name.toLowerCase()) return false;
        return ref.group === undefined ? NATIVE_GROUPS.has(r.group) : r.group === ref.group;
      });
      return candidates.find((r) => r.preferred) ?? candidates[0];
    };
    const hit = find(await this.all(signal)) ?? find(await this.refreshIfStale(signal));
    if (!hit) throw new ScaleAgentError('NOT_FOUND', `the API server does not serve a kind named "${kindName}"`);
    return hit;
  }

  private async refreshIfStale(signal?: AbortSignal): Promise<DiscoveredResource[]> {
    if (this.now() - this.loadedAt < MISS_REFRESH_MS) return this.resources ?? [];
    return this.refresh(signal);
  }

  private async load(signal?: AbortSignal): Promise<DiscoveredResource[]> {
    const out = (await aggregated(this.fetch, signal)) ?? (await legacy(this.fetch, signal));
    this.resources = out;
    this.loadedAt = this.now();
    return out;
  }
}

/** Kinds that can be listed and watched, deduplicated per (group, kind), preferred version first. */
export function watchableOf(resources: readonly DiscoveredResource[]): ApiResource[] {
  const sorted = [...resources].sort((a, b) => Number(b.preferred) - Number(a.preferred));
  const seen = new Set<string>();
  const out: ApiResource[] = [];
  for (const r of sorted) {
    if (!r.verbs.includes('list') || !r.verbs.includes('watch')) continue;
    const key = `${r.group}/${r.kind}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ group: r.group, version: r.version, kind: r.kind, resource: r.resource, namespaced: r.namespaced });
  }
  return out;
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

async function aggregated(fetch: DiscoveryFetch, signal?: AbortSignal): Promise<DiscoveredResource[] | undefined> {
  const out: DiscoveredResource[] = [];
  for (const path of ['/api', '/apis']) {
    const list = await fetch<AggregatedList>(path, { accept: AGGREGATED_ACCEPT, signal });
    if (list.kind !== 'APIGroupDiscoveryList') return undefined;
    for (const group of list.items ?? []) {
      const groupName = group.metadata?.name ?? '';
      // Versions come most preferred first.
      (group.versions ?? []).forEach((v, i) => {
        for (const r of v.resources ?? []) {
          if (!r.responseKind?.kind) continue;
          out.push({
            group: groupName,
            version: v.version,
            kind: r.responseKind.kind,
            resource: r.resource,
            namespaced: r.scope === 'Namespaced',
            verbs: r.verbs ?? [],
            preferred: i === 0,
          });
        }
      });
    }
  }
  return out;
}

interface ResourceList {
  resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[];
}
interface GroupList {
  groups?: { name: string; preferredVersion?: { version: string }; versions?: { version: string }[] }[];
}

async function legacy(fetch: DiscoveryFetch, signal?: AbortSignal): Promise<DiscoveredResource[]> {
  const targets: { group: string; version: string; path: string; preferred: boolean }[] = [
    { group: '', version: 'v1', path: '/api/v1', preferred: true },
  ];
  const groups = await fetch<GroupList>('/apis', { signal });
  for (const g of groups.groups ?? []) {
    const preferred = g.preferredVersion?.version ?? g.versions?.[0]?.version;
    for (const v of g.versions ?? []) {
      const path = `/apis/${g.name}/${v.version}`;
      targets.push({ group: g.name, version: v.version, path, preferred: v.version === preferred });
    }
  }
  const lists = await mapLimit(targets, LEGACY_CONCURRENCY, async (t) => {
    try {
      return { t, list: await fetch<ResourceList>(t.path, { signal }) };
    } catch {
      // An unavailable aggregated API (metrics-server down, ...) must not hide every other group.
      return { t, list: {} as ResourceList };
    }
  });
  const out: DiscoveredResource[] = [];
  for (const { t, list } of lists) {
    for (const r of list.resources ?? []) {
      if (r.name.includes('/')) continue;
      out.push({
        group: t.group,
        version: t.version,
        kind: r.kind,
        resource: r.name,
        namespaced: r.namespaced,
        verbs: r.verbs ?? [],
        preferred: t.preferred,
      });
    }
  }
  return out;
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
