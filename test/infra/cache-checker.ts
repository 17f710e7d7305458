/**
 * Diffs the plugin-server's cache of one account against the API server itself: every object of the given kinds
 * (in the given namespaces) must be cached at exactly its current resourceVersion, and nothing else may be.
 * Reliability tests call waitForCacheToMatch after every fault they inject.
 */
import { KubeConfig, KubernetesObjectApi, type KubernetesObject } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';

export interface CheckedKind {
  apiVersion: string;
  kind: string;
  namespaced: boolean;
}

export interface CacheCheckOptions {
  /** Plugin-server HTTP base, e.g. http://127.0.0.1:7002 */
  httpBase: string;
  account: string;
  /** Kubeconfig file with read access to everything checked (usually the admin one). */
  kubeconfig: string;
  kinds: CheckedKind[];
  /** Namespaces to compare for namespaced kinds; undefined: all namespaces. */
  namespaces?: string[];
  /** Sent with each cache listing: an installed plugin-server's /admin wants `authorization: Bearer <token>`. */
  headers?: Record<string, string>;
}

export interface CacheDiff {
  /** In the API server, not in the cache. */
  missing: string[];
  /** In the cache, not in the API server. */
  extra: string[];
  /** In both, at different resourceVersions: `key api=RV cache=RV`. */
  stale: string[];
  equal: boolean;
  /** Objects compared on the API server side. */
  compared: number;
}

interface CacheEntry {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  resourceVersion: string;
}

function key(kind: string, group: string, namespace: string, name: string): string {
  return `${group ? `${kind}.${group}` : kind} ${namespace ? `${namespace}/` : ''}${name}`;
}

function groupOf(apiVersion: string): string {
  const i = apiVersion.indexOf('/');
  return i < 0 ? '' : apiVersion.slice(0, i);
}

async function listAll(api: KubernetesObjectApi, kind: CheckedKind, namespace?: string): Promise<KubernetesObject[]> {
  const out: KubernetesObject[] = [];
  let continueToken: string | undefined;
  do {
    const page = await api.list(
      kind.apiVersion,
      kind.kind,
      namespace,
      undefined,
      undefined,
      undefined,
      undefined,
      undefined,
      500,
      continueToken,
    );
    out.push(...page.items);
    continueToken = page.metadata?._continue || undefined;
  } while (continueToken);
  return out;
}

export async function checkCache(opts: CacheCheckOptions): Promise<CacheDiff> {
  const kc = new KubeConfig();
  kc.loadFromFile(opts.kubeconfig);
  const api = KubernetesObjectApi.makeApiClient(kc);
  const truth = new Map<string, string>();
  for (const kind of opts.kinds) {
    const scopes = kind.namespaced && opts.namespaces ? opts.namespaces : [undefined];
    for (const ns of scopes) {
      for (const o of await listAll(api, kind, ns)) {
        truth.set(
          key(kind.kind, groupOf(kind.apiVersion), o.metadata?.namespace ?? '', o.metadata?.name ?? ''),
          o.metadata?.resourceVersion ?? '',
        );
      }
    }
  }
  const cached = new Map<string, string>();
  for (const kind of opts.kinds) {
    const group = groupOf(kind.apiVersion);
    const res = await fetch(
      `${opts.httpBase}/admin/cache/${encodeURIComponent(opts.account)}?kind=${kind.kind}&group=${encodeURIComponent(group)}`,
      { headers: opts.headers ?? {} },
    );
    if (res.status === 404) continue;
    if (!res.ok) throw new Error(`cache listing failed: ${res.status} ${await res.text()}`);
    for (const e of (await res.json()) as CacheEntry[]) {
      if (kind.namespaced && opts.namespaces && !opts.namespaces.includes(e.namespace)) continue;
      cached.set(key(e.kind, groupOf(e.apiVersion), e.namespace, e.name), e.resourceVersion);
    }
  }
  const missing = [...truth.keys()].filter((k) => !cached.has(k)).sort();
  const extra = [...cached.keys()].filter((k) => !truth.has(k)).sort();
  const stale = [...truth]
    .filter(([k, rv]) => cached.has(k) && cached.get(k) !== rv)
    .map(([k, rv]) => `${k} api=${rv} cache=${cached.get(k)}`)
    .sort();
  return { missing, extra, stale, equal: !missing.length && !extra.length && !stale.length, compared: truth.size };
}

/**
 * Polls checkCache until the cache equals the API server, or throws with the last diff. A listing that fails (the
 * plugin-server or its store still coming back after a fault) counts as not yet, and is named if it is the last word.
 */
export async function waitForCacheToMatch(opts: CacheCheckOptions, timeoutMs = 30_000): Promise<CacheDiff> {
  const deadline = Date.now() + timeoutMs;
  let diff: CacheDiff | undefined;
  let error: unknown;
  for (;;) {
    try {
      diff = await checkCache(opts);
      error = undefined;
      if (diff.equal) return diff;
    } catch (e) {
      error = e;
    }
    if (Date.now() > deadline) {
      if (error) {
        throw new Error(`cache of ${opts.account} could not be compared after ${timeoutMs} ms: ${String(error)}`, {
          cause: error,
        });
      }
      throw new Error(
        `cache of ${opts.account} differs from the API server after ${timeoutMs} ms: ` +
          JSON.stringify({
            missing: diff?.missing.slice(0, 20),
            extra: diff?.extra.slice(0, 20),
            stale: diff?.stale.slice(0, 20),
          }),
      );
    }
    await sleep(100);
  }
}
