import type { CachedObject, ObjectReads } from '../cache/store.js';
import { Related } from './related.js';
import { arr, obj, toResource, type Resource } from './resource.js';
import { listApplication, listOwned } from './app-index.js';

/** Which accounts the caller may see (auth/spinnaker-accounts.ts). */
export type Allows = (account: string) => boolean;

async function podsOf(store: ObjectReads, serverGroups: readonly Resource[]): Promise<Resource[]> {
  const byAccount = new Map<string, string[]>();
  for (const sg of serverGroups) {
    const uids = byAccount.get(sg.o.account);
    if (uids) uids.push(sg.uid);
    else byAccount.set(sg.o.account, [sg.uid]);
  }
  const out: Resource[] = [];
  for (const [account, uids] of byAccount) {
    for (const o of await listOwned(store, account, uids)) if (o.kind === 'Pod' && o.json) out.push(toResource(o));
  }
  return out;
}

function parsed(objects: readonly CachedObject[]): Resource[] {
  return objects.filter((o) => o.json).map(toResource);
}

/** Everything an application's views need: its objects from the application index, and their server groups' Pods. */
export async function loadApplication(store: ObjectReads, app: string, allows: Allows): Promise<Related> {
  const resources = parsed((await listApplication(store, app)).filter((o) => allows(o.account)));
  const serverGroups = resources.filter((r) => r.category === 'serverGroups');
  return new Related(resources, await podsOf(store, serverGroups));
}

/**
 * What one server group is related to, read around it rather than through its application (it may have none):
 * the Services of its namespace, the Deployment that owns it, its Pods.
 */
export async function loadAroundServerGroup(store: ObjectReads, sg: Resource): Promise<Related> {
  const { account, namespace } = sg.o;
  const services = await store.list({ account, group: '', kind: 'Service', namespace });
  const owners: CachedObject[] = [];
  for (const ref of arr(obj(sg.manifest.metadata)?.ownerReferences)) {
    if (ref.kind !== 'Deployment' || typeof ref.name !== 'string') continue;
    const d = await store.get({ account, group: 'apps', kind: 'Deployment', namespace, name: ref.name });
    if (d) owners.push(d);
  }
  return new Related([sg, ...parsed(services), ...parsed(owners)], await podsOf(store, [sg]));
}

/** What one load balancer is related to: the ReplicaSets and StatefulSets of its namespace, and their Pods. */
export async function loadAroundLoadBalancer(store: ObjectReads, lb: Resource): Promise<Related> {
  const { account, namespace } = lb.o;
  const workloads = parsed([
    ...(await store.list({ account, group: 'apps', kind: 'ReplicaSet', namespace })),
    ...(await store.list({ account, group: 'apps', kind: 'StatefulSet', namespace })),
  ]);
  const partial = new Related([lb, ...workloads], []);
  const behind = partial.serverGroupsBehind(lb);
  return new Related([lb, ...behind], await podsOf(store, behind));
}
