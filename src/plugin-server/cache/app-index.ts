import { kindRow } from '../../shared/kinds.js';
import type { IndexKeys } from './store.js';
import { ANNOTATIONS, monikerOf } from '../../shared/ops/spinnaker.js';
import type { KubeObject } from '../../shared/ops/types.js';

type Obj = Record<string, unknown>;

/** Per-account indexing choices, as Clouddriver's account settings of the same names. */
export interface IndexOptions {
  /** Only objects carrying `moniker.spinnaker.io/application` belong to an application. */
  onlySpinnakerManaged: boolean;
  /** Every kind belongs to its application, not only the ones Spinnaker shows (server groups, load balancers...). */
  cacheAllApplicationRelationships: boolean;
}

export const DEFAULT_INDEX_OPTIONS: IndexOptions = {
  onlySpinnakerManaged: false,
  cacheAllApplicationRelationships: false,
};

/** The account's choices (its record, as its agent registered it), defaulting to Clouddriver's defaults. */
export function indexOptionsOf(record: Partial<IndexOptions> | undefined): IndexOptions {
  if (!record?.onlySpinnakerManaged && !record?.cacheAllApplicationRelationships) return DEFAULT_INDEX_OPTIONS;
  return {
    onlySpinnakerManaged: record.onlySpinnakerManaged === true,
    cacheAllApplicationRelationships: record.cacheAllApplicationRelationships === true,
  };
}

/** Longer values do not fit the index columns; Spinnaker's names are far shorter. */
const MAX_KEY = 253;

export const NO_KEYS: IndexKeys = { app: '', cluster: '', ownerUid: '' };

/**
 * The index keys of an object, computed once on ingest (the plugin-server parses every object then anyway) so the
 * views read an application without scanning the cache. As Clouddriver's KubernetesCacheDataConverter: server
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
    return ownerUid ? { app: '', cluster: '', ownerUid } : NO_KEYS;
  }
  // List items may come without `kind`; the moniker's sequence rule depends on it.
  const m = monikerOf({ ...manifest, kind } as unknown as KubeObject);
  const cluster = m.cluster ?? '';
  if (!m.app || m.app.length > MAX_KEY) return ownerUid ? { app: '', cluster: '', ownerUid } : NO_KEYS;
  const clustered = (category === 'serverGroups' || category === 'serverGroupManagers') && cluster.length <= MAX_KEY;
  return { app: m.app, cluster: clustered ? cluster : '', ownerUid };
}

function controllerUid(manifest: Obj): string {
  const refs = (manifest.metadata as Obj | undefined)?.ownerReferences;
  if (!Array.isArray(refs)) return '';
  for (const r of refs as Obj[]) {
    if (r && r.controller === true && typeof r.uid === 'string' && r.uid.length <= 64) return r.uid;
  }
  return '';
}
