/**
 * How a list endpoint's answer from this server and the upstream Clouddriver's become one, per route (front
 * mode). The two sides hold disjoint accounts (registration refuses a name the upstream has, except one the
 * automatic migration is moving, listed once by byName), so merging is concatenation, except where Clouddriver's
 * shape keys by application, account or result set.
 */

type Json = Record<string, unknown>;

/** One side's answer: its body, or its error (this server's thrown error) when it had none. */
export type Side = { ok: true; body: unknown } | { ok: false; status: number; error?: unknown };

export type Merge = (local: unknown, upstream: unknown) => unknown;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

function asObject(v: unknown): Json {
  return isObject(v) ? v : {};
}

const nameOf = (v: unknown): unknown => (isObject(v) ? v.name : undefined);

/** Lists of things that belong to one account each: both sides, this server's first. */
const concat: Merge = (local, upstream) => [...asArray(local), ...asArray(upstream)];

/** Accounts by name: a name on both sides (refused at registration, but the upstream may add one later) once. */
const byName: Merge = (local, upstream) => {
  const seen = new Set(asArray(local).map(nameOf));
  return [...asArray(local), ...asArray(upstream).filter((c) => !seen.has(nameOf(c)))];
};

/** Maps keyed by account (or any key the sides do not share); a shared key's maps are merged one level down. */
const deepMap: Merge = (local, upstream) => {
  const out: Json = { ...asObject(upstream) };
  for (const [k, v] of Object.entries(asObject(local))) {
    const other = out[k];
    out[k] = isObject(other) && isObject(v) ? deepMap(v, other) : Array.isArray(other) ? concat(v, other) : v;
  }
  return out;
};

/** `cloudProviders` is a comma-separated list in Front50's and Clouddriver's application attributes. */
function providers(...values: unknown[]): string {
  const all = values.flatMap((v) => (typeof v === 'string' ? v.split(',') : [])).map((p) => p.trim());
  return [...new Set(all.filter(Boolean))].join(',');
}

/** GET /applications: one entry per name, `clusterNames` (account → cluster names) merged. */
const applications: Merge = (local, upstream) => {
  const out = new Map<unknown, Json>();
  for (const app of [...asArray(upstream), ...asArray(local)]) {
    if (!isObject(app)) continue;
    const prev = out.get(app.name);
    if (!prev) {
      out.set(app.name, app);
      continue;
    }
    out.set(app.name, {
      ...prev,
      attributes: { ...asObject(app.attributes), ...asObject(prev.attributes) },
      clusterNames: deepMap(app.clusterNames, prev.clusterNames),
    });
  }
  return [...out.values()].sort((a, b) => String(a.name).toLowerCase().localeCompare(String(b.name).toLowerCase()));
};

/** GET /applications/{app}: the upstream's attributes (it reads Front50's), both sides' clusters. */
const application: Merge = (local, upstream) => {
  const l = asObject(local);
  const u = asObject(upstream);
  const la = asObject(l.attributes);
  const ua = asObject(u.attributes);
  const cloudProviders = providers(ua.cloudProviders, la.cloudProviders);
  return {
    ...l,
    ...u,
    attributes: { ...la, ...ua, ...(cloudProviders ? { cloudProviders } : {}) },
    clusters: deepMap(l.clusters, u.clusters),
  };
};

/**
 * GET /search: Clouddriver answers a list of result sets and Gate and Deck read the first; so the first set
 * carries every result (the upstream's sets' and this server's) and `totalMatches` summed.
 */
const search: Merge = (local, upstream) => {
  const sets = [...asArray(upstream), ...asArray(local)].filter(isObject);
  if (sets.length === 0) return [];
  const first = sets[0]!;
  return [
    {
      ...first,
      totalMatches: sets.reduce((n, s) => n + (typeof s.totalMatches === 'number' ? s.totalMatches : 0), 0),
      results: sets.flatMap((s) => asArray(s.results)),
    },
  ];
};

/** GET routes answered by both sides, by fastify route pattern. */
export const MERGED_ROUTES: ReadonlyMap<string, Merge> = new Map<string, Merge>([
  ['/credentials', byName],
  ['/applications', applications],
  ['/applications/:app', application],
  ['/applications/:app/clusters', deepMap],
  ['/applications/:app/serverGroups', concat],
  ['/applications/:app/serverGroupManagers', concat],
  ['/applications/:app/loadBalancers', concat],
  ['/applications/:app/rawResources', concat],
  ['/serverGroups', concat],
  ['/securityGroups', deepMap],
  ['/search', search],
  ['/task', concat],
  ['/cache/kubernetes/:type', concat],
]);

/** Whether an answer has the shape its route's merge reads (a list, or a map). */
export function shapeFits(route: string, body: unknown): boolean {
  const map = route === '/applications/:app' || route === '/applications/:app/clusters' || route === '/securityGroups';
  return map ? isObject(body) : Array.isArray(body);
}

/**
 * The merged answer, or which side's error stands: a side that answered 404 counts as empty, so a single object
 * (`/applications/{app}`) is 404 only when both sides say so.
 */
export function mergeSides(route: string, local: Side, upstream: Side): Side {
  const merge = MERGED_ROUTES.get(route);
  if (!merge) return local;
  if (!upstream.ok) return local;
  if (!local.ok) return local.status === 404 ? upstream : local;
  return { ok: true, body: merge(local.body, upstream.body) };
}
