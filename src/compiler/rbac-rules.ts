import type { PolicyRule } from '../../cdk8s/index.js';
import { DEFAULT_KINDS, resolveKind, type KindInfo } from './kinds.js';
import type { Account } from './topology.js';

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete'];

/** The kinds an account caches: its `kinds`, or the standard set minus `omitKinds`; cluster kinds only cluster-wide. */
export function effectiveKinds(account: Account): readonly KindInfo[] {
  return memo(kindsByKey, kindsKey(account), () => computeKinds(account));
}

/**
 * What an account's kinds and rules depend on. Most accounts of a large topology share them, so each set is worked
 * out once and shared (read-only) by every account with the same key.
 */
function kindsKey(account: Account): string {
  return JSON.stringify([account.kinds, account.omitKinds, account.namespaces.length > 0]);
}
const kindsByKey = new Map<string, readonly KindInfo[]>();
const rulesByKey = new Map<string, AccountRules>();

function memo<T>(cache: Map<string, T>, key: string, compute: () => T): T {
  let v = cache.get(key);
  if (v === undefined) {
    v = compute();
    // Topologies are finite; the bound keeps a long-lived process (tests, a watch mode) from growing without end.
    if (cache.size >= 1000) cache.clear();
    cache.set(key, v);
  }
  return v;
}

function computeKinds(account: Account): KindInfo[] {
  const names = account.kinds.length > 0 ? account.kinds : DEFAULT_KINDS;
  const omit = new Set(account.omitKinds.map((k) => (resolveKind(k)?.kind ?? k).toLowerCase()));
  const seen = new Set<string>();
  const out: KindInfo[] = [];
  for (const name of names) {
    const info = resolveKind(name);
    if (!info || omit.has(info.kind.toLowerCase())) continue;
    if (!info.namespaced && account.namespaces.length > 0) continue;
    const id = `${info.group}/${info.resource}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(info);
  }
  return out;
}

/** Kind names as the agent config spells them (`Deployment`, `Rollout.argoproj.io`). */
export function agentKindNames(account: Account): string[] {
  return effectiveKinds(account).map((k) => (resolveKind(k.kind) ? k.kind : `${k.kind}.${k.group}`));
}

/** Shared by accounts with the same kinds, access and extra rules: read-only. */
export interface AccountRules {
  /** Rules on namespaced resources (granted per namespace, or cluster-wide). */
  readonly rules: readonly PolicyRule[];
  /** Rules on cluster-scoped resources; only for cluster-wide accounts. */
  readonly clusterRules: readonly PolicyRule[];
}

/**
 * get/list/watch on every cached kind; create/update/patch/delete (and the operation subresources) on deployable
 * kinds for read-write accounts. Secrets are cached as metadata, for which list/watch suffice, so read-only accounts
 * cannot `get` a Secret's data. Rules are grouped by API group and verb set, sorted, and never contain '*' unless
 * the topology's extraRules ask for it.
 */
export function accountRules(account: Account): AccountRules {
  const key = JSON.stringify([kindsKey(account), account.access, account.rbac.extraRules]);
  return memo(rulesByKey, key, () => computeRules(account));
}

function computeRules(account: Account): AccountRules {
  const rw = account.access === 'read-write';
  const grants: { group: string; resource: string; verbs: string[]; cluster: boolean }[] = [];
  for (const k of effectiveKinds(account)) {
    const cluster = !k.namespaced;
    if (k.kind === 'Secret' && k.group === '') {
      grants.push({ group: '', resource: 'secrets', verbs: rw ? [...READ, ...WRITE] : ['list', 'watch'], cluster });
      continue;
    }
    grants.push({
      group: k.group,
      resource: k.resource,
      verbs: rw && k.deployable ? [...READ, ...WRITE] : READ,
      cluster,
    });
    for (const sub of k.readSubresources ?? []) {
      grants.push({ group: k.group, resource: `${k.resource}/${sub}`, verbs: ['get'], cluster });
    }
    if (rw) {
      for (const sub of k.writeSubresources ?? []) {
        grants.push({ group: k.group, resource: `${k.resource}/${sub}`, verbs: ['get', 'update', 'patch'], cluster });
      }
    }
  }
  const extra = account.rbac.extraRules.map((r) => ({
    apiGroups: [...r.apiGroups],
    resources: [...r.resources],
    verbs: [...r.verbs],
  }));
  return {
    rules: [...group(grants.filter((g) => !g.cluster)), ...extra],
    clusterRules: group(grants.filter((g) => g.cluster)),
  };
}

function group(grants: { group: string; resource: string; verbs: string[] }[]): PolicyRule[] {
  const byKey = new Map<string, { group: string; verbs: string[]; resources: Set<string> }>();
  for (const g of grants) {
    const key = `${g.group}\u0000${g.verbs.join(',')}`;
    let e = byKey.get(key);
    if (!e) {
      e = { group: g.group, verbs: g.verbs, resources: new Set() };
      byKey.set(key, e);
    }
    e.resources.add(g.resource);
  }
  return [...byKey.values()]
    .map((e) => ({ apiGroups: [e.group], resources: [...e.resources].sort(), verbs: e.verbs }))
    .sort((a, b) => cmp(a.apiGroups[0] ?? '', b.apiGroups[0] ?? '') || cmp(a.verbs.join(','), b.verbs.join(',')) || 0);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
