import { ANNOTATIONS } from '../../shared/ops/spinnaker.js';
import { resolveKind, canonicalKindName } from './kinds.js';
import { arr, obj, type Resource } from './resource.js';
import { ownerOf } from './app-index.js';

/**
 * The relationships Clouddriver's caching agents record between objects (KubernetesCacheDataConverter and the kind
 * handlers), computed over a set of related objects: Pods ↔ their controller and ReplicaSets ↔ their Deployment
 * through ownerReferences, a Service ↔ the ReplicaSets of its namespace whose pod template its selector matches, a
 * StatefulSet ↔ the Service its `serviceName` names.
 */
export class Related {
  readonly serverGroups: Resource[] = [];
  readonly managers: Resource[] = [];
  readonly loadBalancers: Resource[] = [];
  readonly securityGroups: Resource[] = [];
  private readonly podsByOwner = new Map<string, Resource[]>();
  private readonly byUid = new Map<string, Resource>();

  constructor(resources: readonly Resource[], pods: readonly Resource[]) {
    for (const r of resources) {
      this.byUid.set(r.uid, r);
      if (r.category === 'serverGroups') this.serverGroups.push(r);
      else if (r.category === 'serverGroupManagers') this.managers.push(r);
      else if (r.category === 'loadBalancers') this.loadBalancers.push(r);
      else if (r.category === 'securityGroups') this.securityGroups.push(r);
    }
    for (const p of pods) {
      const owner = ownerOf(p.o);
      if (!owner) continue;
      const list = this.podsByOwner.get(owner);
      if (list) list.push(p);
      else this.podsByOwner.set(owner, [p]);
    }
  }

  podsOf(sg: Resource): Resource[] {
    return this.podsByOwner.get(sg.uid) ?? [];
  }

  /** The Deployments (known here) that own the server group. */
  managersOf(sg: Resource): Resource[] {
    return ownerUids(sg).flatMap((uid) => {
      const m = this.byUid.get(uid);
      return m && m.category === 'serverGroupManagers' ? [m] : [];
    });
  }

  serverGroupsOf(manager: Resource): Resource[] {
    return this.serverGroups.filter((sg) => ownerUids(sg).includes(manager.uid));
  }

  /** Load balancers linked to the server group by the cache relationships (not by its annotation). */
  linkedLoadBalancers(sg: Resource): Resource[] {
    return this.loadBalancers.filter((lb) => selects(lb, sg));
  }

  serverGroupsBehind(lb: Resource): Resource[] {
    return this.serverGroups.filter((sg) => selects(lb, sg));
  }

  /** Names Deck shows: linked load balancers, plus those the `traffic.spinnaker.io/load-balancers` annotation lists. */
  loadBalancerNames(sg: Resource): string[] {
    const names = new Set(this.linkedLoadBalancers(sg).map((lb) => lb.fullName));
    for (const n of annotatedLoadBalancers(sg)) names.add(n);
    return [...names];
  }

  /** Clouddriver's rule: disabled when the annotation names load balancers but none is linked any more. */
  disabled(sg: Resource): boolean {
    return this.linkedLoadBalancers(sg).length === 0 && annotatedLoadBalancers(sg).length > 0;
  }
}

export function ownerUids(r: Resource): string[] {
  return arr(obj(r.manifest.metadata)?.ownerReferences).flatMap((ref) =>
    typeof ref.uid === 'string' ? [ref.uid] : [],
  );
}

function selects(lb: Resource, sg: Resource): boolean {
  if (lb.o.account !== sg.o.account || lb.o.namespace !== sg.o.namespace) return false;
  if (lb.o.kind !== 'Service') return false;
  if (sg.o.kind === 'StatefulSet') return obj(sg.manifest.spec)?.serviceName === lb.o.name;
  if (sg.o.kind !== 'ReplicaSet') return false;
  const selector = obj(obj(lb.manifest.spec)?.selector) as Record<string, unknown> | undefined;
  if (!selector || Object.keys(selector).length === 0) return false;
  const labels = (obj(obj(obj(obj(sg.manifest.spec)?.template)?.metadata)?.labels) ?? {}) as Record<string, unknown>;
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** The annotation holds a JSON list of "kind name" strings; kinds are normalized to Clouddriver's names. */
function annotatedLoadBalancers(sg: Resource): string[] {
  const raw = (obj(obj(sg.manifest.metadata)?.annotations) ?? {})[ANNOTATIONS.loadBalancers];
  if (typeof raw !== 'string') return [];
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    return [];
  }
  if (!Array.isArray(list)) return [];
  return list.flatMap((entry) => {
    if (typeof entry !== 'string') return [];
    const space = entry.indexOf(' ');
    if (space <= 0) return [];
    const k = resolveKind(entry.slice(0, space));
    return [`${canonicalKindName(k.group ?? '', k.kind)} ${entry.slice(space + 1)}`];
  });
}
