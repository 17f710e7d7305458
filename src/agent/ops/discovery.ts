import type { KubeConfig } from '@kubernetes/client-node';
import { ScaleAgentError } from '../../shared/errors.js';
import { groupOf, NATIVE_GROUPS, parseKind } from '../../shared/ops/kinds.js';
import type { KubeRest, RequestIntent } from './rest.js';

/** One REST resource, as discovery reports it (every verb, not only the watchable ones). */
export interface OpResource {
  group: string;
  version: string;
  kind: string;
  /** Plural, e.g. "deployments". */
  resource: string;
  namespaced: boolean;
  verbs: string[];
  /** True when this is the group's preferred version. */
  preferred: boolean;
}

export const apiVersionOf = (r: OpResource): string => (r.group ? `${r.group}/${r.version}` : r.version);

/** "deployments.apps", "configmaps": the name RBAC and error messages use. */
export const resourceName = (r: OpResource): string => (r.group ? `${r.resource}.${r.group}` : r.resource);

export function collectionPath(r: OpResource, namespace: string | undefined): string {
  const base = r.group ? `/apis/${r.group}/${r.version}` : `/api/${r.version}`;
  return r.namespaced && namespace
    ? `${base}/namespaces/${encodeURIComponent(namespace)}/${r.resource}`
    : `${base}/${r.resource}`;
}

export function objectPath(r: OpResource, namespace: string | undefined, name: string, sub?: string): string {
  return `${collectionPath(r, namespace)}/${encodeURIComponent(name)}${sub ? `/${sub}` : ''}`;
}

export function intentFor(verb: string, r: OpResource, namespace?: string, name?: string, sub?: string): RequestIntent {
  const out: RequestIntent = { verb, resource: resourceName(r) + (sub ? `/${sub}` : '') };
  if (r.namespaced && namespace) out.namespace = namespace;
  if (name) out.name = name;
  return out;
}

interface GroupList {
  groups?: { name: string; preferredVersion?: { version: string }; versions?: { version: string }[] }[];
}
interface ResourceList {
  resources?: { name: string; kind: string; namespaced: boolean; verbs?: string[] }[];
}

/**
 * Discovery cached per account (per KubeConfig object). A miss refreshes once — a CRD deployed a moment ago, or
 * in the same request, becomes resolvable without restarting anything — and refreshes are rate-limited so a
 * request for a kind that does not exist cannot hammer the API server.
 */
export class Discovery {
  private resources: OpResource[] | undefined;
  private loading: Promise<OpResource[]> | undefined;
  private loadedAt = 0;

  constructor(private readonly rest: KubeRest) {}

  async all(signal?: AbortSignal): Promise<OpResource[]> {
    if (this.resources) return this.resources;
    return this.refresh(signal);
  }

  refresh(signal?: AbortSignal): Promise<OpResource[]> {
    this.loading ??= this.load(signal).finally(() => (this.loading = undefined));
    return this.loading;
  }

  /** The resource serving `apiVersion`/`kind` exactly. */
  async forManifest(apiVersion: string, kind: string, signal?: AbortSignal): Promise<OpResource> {
    const group = groupOf(apiVersion);
    const version = apiVersion.includes('/') ? apiVersion.slice(apiVersion.indexOf('/') + 1) : apiVersion;
    const find = (list: OpResource[]): OpResource | undefined =>
      list.find((r) => r.group === group && r.version === version && r.kind === kind);
    const hit = find(await this.all(signal)) ?? find(await this.refreshIfStale(signal));
    if (!hit) {
      throw new ScaleAgentError('NOT_FOUND', `the API server does not serve kind ${kind} in ${apiVersion}`);
    }
    return hit;
  }

  /** The resource a Clouddriver kind name means ("deployment", "rs", "CronTab.stable.example.com"), preferred version. */
  async forKindName(kindName: string, signal?: AbortSignal): Promise<OpResource> {
    const ref = parseKind(kindName);
    const find = (list: OpResource[]): OpResource | undefined => {
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

  private async refreshIfStale(signal?: AbortSignal): Promise<OpResource[]> {
    if (Date.now() - this.loadedAt < 500) return this.resources ?? [];
    return this.refresh(signal);
  }

  private async load(signal?: AbortSignal): Promise<OpResource[]> {
    const targets: { group: string; version: string; path: string; preferred: boolean }[] = [
      { group: '', version: 'v1', path: '/api/v1', preferred: true },
    ];
    const groups = await this.rest.get<GroupList>('/apis', { signal, intent: { verb: 'get', resource: 'discovery' } });
    for (const g of groups.groups ?? []) {
      const preferred = g.preferredVersion?.version;
      for (const v of g.versions ?? []) {
        targets.push({
          group: g.name,
          version: v.version,
          path: `/apis/${g.name}/${v.version}`,
          preferred: v.version === preferred,
        });
      }
    }
    const lists = await Promise.all(
      targets.map(async (t) => {
        try {
          return { t, list: await this.rest.get<ResourceList>(t.path, { signal }) };
        } catch {
          // An unavailable aggregated API (metrics-server down, ...) must not hide every other group.
          return { t, list: {} as ResourceList };
        }
      }),
    );
    const out: OpResource[] = [];
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
    this.resources = out;
    this.loadedAt = Date.now();
    return out;
  }
}

const cache = new WeakMap<KubeConfig, { rest: KubeRest; discovery: Discovery }>();

/** The REST client and discovery cache of one account, created on first use. */
export function clientsFor(
  kc: KubeConfig,
  make: (kc: KubeConfig) => KubeRest,
): { rest: KubeRest; discovery: Discovery } {
  let hit = cache.get(kc);
  if (!hit) {
    const rest = make(kc);
    hit = { rest, discovery: new Discovery(rest) };
    cache.set(kc, hit);
  }
  return hit;
}
