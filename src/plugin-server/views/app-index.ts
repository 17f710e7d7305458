import { kindRow } from '../../shared/kinds.js';
import {
  NO_KEYS,
  type CachedObject,
  type IndexDefinition,
  type IndexKeys,
  type IndexOptions,
  type IndexPair,
  type ObjectIndex,
} from '../cache/store.js';
import { ANNOTATIONS, monikerOf } from '../../shared/ops/spinnaker.js';
import type { KubeObject } from '../../shared/ops/types.js';

type Obj = Record<string, unknown>;

/** The application Spinnaker shows an object under. */
export const APPLICATION = 'application';
/** Its cluster, for server groups and their managers only: what /applications lists. */
export const CLUSTER = 'cluster';
/** uid of its controller (ownerReferences[controller=true]): how Pods find their server group. */
export const OWNER = 'owner';

/** Longer values do not fit the index columns; Spinnaker's names are far shorter. */
const MAX_KEY = 253;

/**
 * The views' index keys of an object, computed once on ingest (the plugin-server parses every object then anyway)
 * so the views read an application without scanning the cache. As Clouddriver's KubernetesCacheDataConverter: server
 * groups, their managers, load balancers and security groups belong to an application, server groups and managers
 * also to a cluster, other kinds only with `cacheAllApplicationRelationships`; objects Spinnaker does not manage are
 * left out with `onlySpinnakerManaged`.
 */
export function indexKeys(group: string, kind: string, manifest: Obj, options: IndexOptions): IndexKeys {
  if (typeof manifest.metadata !== 'object' || manifest.metadata === null) return NO_KEYS;
  const category = kindRow(group, kind)?.clouddriver?.category;
  const ownerUid = controllerUid(manifest);
  const logical =
    category === 'serverGroups' ||
    category === 'serverGroupManagers' ||
    category === 'loadBalancers' ||
    category === 'securityGroups';
  const annotations = (manifest.metadata as KubeObject['metadata']).annotations;
  const managed =
    typeof annotations === 'object' && annotations !== null && Boolean(annotations[ANNOTATIONS.application]);
  if ((!logical && !options.cacheAllApplicationRelationships) || (options.onlySpinnakerManaged && !managed)) {
    return ownerUid ? { [OWNER]: ownerUid } : NO_KEYS;
  }
  // List items may come without `kind`; the moniker's sequence rule depends on it.
  const m = monikerOf({ ...manifest, kind } as unknown as KubeObject);
  const cluster = m.cluster ?? '';
  if (!m.app || m.app.length > MAX_KEY) return ownerUid ? { [OWNER]: ownerUid } : NO_KEYS;
  const clustered = (category === 'serverGroups' || category === 'serverGroupManagers') && cluster.length <= MAX_KEY;
  return { [APPLICATION]: m.app, [CLUSTER]: clustered ? cluster : '', [OWNER]: ownerUid };
}

function controllerUid(manifest: Obj): string {
  const refs = (manifest.metadata as Obj | undefined)?.ownerReferences;
  if (!Array.isArray(refs)) return '';
  for (const r of refs as Obj[]) {
    if (r && r.controller === true && typeof r.uid === 'string' && r.uid.length <= 64) return r.uid;
  }
  return '';
}

/** The views' indexes, registered on the cache where the server is built (server.ts). */
export const APPLICATION_INDEX: IndexDefinition = {
  names: [APPLICATION, CLUSTER, OWNER],
  keys: indexKeys,
  module: import.meta.url,
  export: 'APPLICATION_INDEX',
};

/** Live objects that belong to the application, in every account. */
export function listApplication(cache: ObjectIndex, app: string): Promise<CachedObject[]> {
  return app ? cache.byIndex(APPLICATION, [app]) : Promise.resolve([]);
}

/** Live objects of the account owned (as controller) by one of these uids: the Pods of server groups. */
export function listOwned(cache: ObjectIndex, account: string, ownerUids: readonly string[]): Promise<CachedObject[]> {
  const uids = [...new Set(ownerUids)].filter(Boolean);
  return uids.length ? cache.byIndex(OWNER, uids, account) : Promise.resolve([]);
}

/** Every (application, account, cluster) of live server groups and managers, sorted; of one application if given. */
export async function applicationClusters(
  cache: ObjectIndex,
  app?: string,
): Promise<{ app: string; account: string; cluster: string }[]> {
  return (await cache.indexPairs(APPLICATION, CLUSTER, app)).map((p: IndexPair) => ({
    app: p.outer,
    account: p.account,
    cluster: p.inner,
  }));
}

/** The object's cluster and controller, as the index reads return them. */
export const clusterOf = (o: CachedObject): string => o.index?.[CLUSTER] ?? '';
export const ownerOf = (o: CachedObject): string => o.index?.[OWNER] ?? '';
