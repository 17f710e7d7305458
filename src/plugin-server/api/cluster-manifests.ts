import { ScaleAgentError } from '../../shared/errors.js';
import { monikerOf } from '../../shared/ops/spinnaker.js';
import type { KubeObject } from '../../shared/ops/types.js';
import type { CachedObject } from '../cache/store.js';
import { canonicalKindName } from '../views/kinds.js';

/**
 * The cluster reads Orca's manifest stages resolve their targets with (docs/clouddriver-compatibility.md, Cluster
 * coordinates): the objects of one kind and namespace that belong to a moniker cluster, as Clouddriver's
 * KubernetesCoordinates, and the one of them a dynamic criteria picks.
 */

/** Clouddriver's KubernetesCoordinates as it serialises them (Orca reads them as ManifestCoordinates). */
export interface ManifestCoordinates {
  /** Clouddriver's kind name: "replicaSet", "deployment", "CronTab.stable.example.com". */
  kind: string;
  namespace: string;
  name: string;
}

export const CRITERIA = ['newest', 'second_newest', 'oldest', 'smallest', 'largest'] as const;
export type Criteria = (typeof CRITERIA)[number];

export function parseCriteria(value: string): Criteria {
  if ((CRITERIA as readonly string[]).includes(value)) return value as Criteria;
  throw new ScaleAgentError('INVALID_INPUT', `unknown criteria "${value}": use one of ${CRITERIA.join(', ')}`);
}

type Obj = Record<string, unknown>;

interface Member {
  object: CachedObject;
  manifest: Obj;
}

function parseManifest(o: CachedObject): Obj {
  return JSON.parse(o.json) as Obj;
}

function creationTimestamp(m: Obj): string {
  const t = (m.metadata as Obj | undefined)?.creationTimestamp;
  return typeof t === 'string' ? t : '';
}

/** `spec.replicas`, -1 when absent (Clouddriver's size order puts those first). */
function replicas(m: Obj): number {
  const r = (m.spec as Obj | undefined)?.replicas;
  return typeof r === 'number' ? r : -1;
}

export function coordinatesOf(o: CachedObject): ManifestCoordinates {
  return { kind: canonicalKindName(o.group, o.kind), namespace: o.namespace, name: o.name };
}

/**
 * The objects whose moniker (`monikerOf`: annotations, else the name's Frigga parts) names this cluster and, when `app` is
 * given, this application. Clouddriver checks both for the cluster list and only the cluster for a dynamic target.
 */
export function clusterMembers(objects: readonly CachedObject[], cluster: string, app?: string): CachedObject[] {
  return objects.filter((o) => {
    const m = monikerOf({ ...(parseManifest(o) as unknown as KubeObject), kind: o.kind });
    return m.cluster === cluster && (app === undefined || m.app === app);
  });
}

/**
 * Ascending by age (creationTimestamp, then name) or by size (`spec.replicas`, then name), as Clouddriver's
 * KubernetesHandler comparators do. creationTimestamp has one-second resolution, so versions deployed within one
 * second tie; Clouddriver keeps its list order for ties, which is the API server's (by name), so the name breaks
 * them here too: `-v000` sorts before `-v001`.
 */
export function sortAscending(objects: readonly CachedObject[], by: 'age' | 'size'): CachedObject[] {
  const members: Member[] = objects.map((object) => ({ object, manifest: parseManifest(object) }));
  const byName = (a: Member, b: Member) => (a.object.name < b.object.name ? -1 : a.object.name > b.object.name ? 1 : 0);
  members.sort((a, b) => {
    if (by === 'size') return replicas(a.manifest) - replicas(b.manifest) || byName(a, b);
    const ta = creationTimestamp(a.manifest);
    const tb = creationTimestamp(b.manifest);
    return (ta < tb ? -1 : ta > tb ? 1 : 0) || byName(a, b);
  });
  return members.map((m) => m.object);
}

/** The member a criteria names (Clouddriver's ManifestController), undefined when there is none. */
export function pickByCriteria(objects: readonly CachedObject[], criteria: Criteria): CachedObject | undefined {
  const sorted = sortAscending(objects, criteria === 'smallest' || criteria === 'largest' ? 'size' : 'age');
  switch (criteria) {
    case 'oldest':
    case 'smallest':
      return sorted[0];
    case 'newest':
    case 'largest':
      return sorted[sorted.length - 1];
    case 'second_newest':
      return sorted[sorted.length - 2];
  }
}
