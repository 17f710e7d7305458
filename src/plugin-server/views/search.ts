import { KINDS, type SpinnakerCategory } from '../../shared/kinds.js';
import { canonicalKindName, resolveKind } from './kinds.js';
import type { ObjectReads, ObjectKeyOf } from '../cache/store.js';
import type { Obj } from './resource.js';
import { applicationClusters } from './app-index.js';

const CATEGORIES: ReadonlySet<string> = new Set<SpinnakerCategory>([
  'serverGroupManagers',
  'serverGroups',
  'instances',
  'loadBalancers',
  'securityGroups',
  'configs',
]);

/** The extra field Clouddriver's kind handlers add to a search hit (hydrateSearchResult). */
const EXTRA: Record<string, string> = {
  replicaSet: 'serverGroup',
  daemonSet: 'serverGroup',
  pod: 'instanceId',
  service: 'loadBalancer',
  ingress: 'loadBalancer',
  networkPolicy: 'id',
};

interface KindTarget {
  kind: string;
  group: string | undefined;
}

/** Search `type`s to kinds: a Spinnaker category stands for each of its kinds, anything else names a kind. */
function kindsOf(types: readonly string[]): { kinds: KindTarget[]; applications: boolean; clusters: boolean } {
  const kinds = new Map<string, KindTarget>();
  let applications = false;
  let clusters = false;
  for (const t of types) {
    if (t === 'applications') applications = true;
    else if (t === 'clusters') clusters = true;
    else if (CATEGORIES.has(t)) {
      for (const r of KINDS) if (r.clouddriver?.category === t) kinds.set(`${r.group}/${r.kind}`, r);
    } else {
      const k = resolveKind(t);
      kinds.set(`${k.group ?? '*'}/${k.kind}`, k);
    }
  }
  return { kinds: [...kinds.values()], applications, clusters };
}

function hit(o: ObjectKeyOf, kindName: string): Obj {
  const fullName = `${kindName} ${o.name}`;
  const category = KINDS.find((r) => r.group === o.group && r.kind === o.kind)?.clouddriver?.category;
  const extra = EXTRA[kindName];
  return {
    provider: 'kubernetes',
    group: kindName,
    kubernetesKind: kindName,
    account: o.account,
    namespace: o.namespace,
    region: o.namespace,
    name: fullName,
    type: category ?? 'unclassified',
    ...(extra ? { [extra]: fullName } : {}),
  };
}

/**
 * Clouddriver's Kubernetes search: the lower-cased query must occur in an object's cache key
 * (`kubernetes.v2:infrastructure:<kind>:<account>:<namespace>:<name>`, or the logical keys of applications and
 * clusters), so it matches on kind, account, namespace or name. Hits come by kind, then account, namespace and
 * name; the store matches without reading objects (ObjectReads.searchKeys). Unlike Clouddriver, objects
 * related to a matching application or cluster are not added as extra hits (docs/clouddriver-compatibility.md).
 */
export async function search(
  store: ObjectReads,
  request: { query: string; types: readonly string[]; accounts: readonly string[] },
): Promise<Obj[]> {
  const q = request.query.toLowerCase();
  const { kinds, applications, clusters } = kindsOf(request.types);
  const allowed = new Set(request.accounts);
  const out: Obj[] = [];
  if (applications || clusters) {
    const seen = new Set<string>();
    for (const c of await applicationClusters(store)) {
      if (!allowed.has(c.account)) continue;
      if (applications && !seen.has(c.app) && `kubernetes.v2:logical:applications:${c.app}`.includes(q)) {
        seen.add(c.app);
        out.push({
          provider: 'kubernetes',
          group: 'applications',
          logicalKind: 'applications',
          name: c.app,
          application: c.app,
          type: 'applications',
        });
      }
      if (clusters && `kubernetes.v2:logical:clusters:${c.account}:${c.app}:${c.cluster}`.includes(q)) {
        out.push({
          provider: 'kubernetes',
          group: 'clusters',
          logicalKind: 'clusters',
          account: c.account,
          application: c.app,
          name: c.cluster,
          cluster: c.cluster,
          type: 'clusters',
        });
      }
    }
  }
  for (const k of kinds) {
    for (const o of await store.searchKeys(k, canonicalKindName(k.group ?? '', k.kind), q)) {
      if (allowed.has(o.account)) out.push(hit(o, canonicalKindName(o.group, o.kind)));
    }
  }
  return out;
}
