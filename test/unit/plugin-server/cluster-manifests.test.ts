/**
 * Cluster coordinates and the dynamic criteria Orca resolves targets with (ManifestController's oldest, newest,
 * second_newest, smallest, largest), on cached objects shaped as the agent sends them.
 */
import { describe, expect, it } from 'vitest';
import {
  clusterMembers,
  coordinatesOf,
  parseCriteria,
  pickByCriteria,
  sortAscending,
} from '../../../src/plugin-server/api/cluster-manifests.js';
import type { CachedObject } from '../../../src/plugin-server/cache/store.js';

function rs(name: string, created: string, replicas?: number, annotations: Record<string, string> = {}): CachedObject {
  const manifest = {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name, namespace: 'shop', creationTimestamp: created, annotations },
    spec: replicas === undefined ? {} : { replicas },
  };
  return {
    account: 'k8s',
    group: 'apps',
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    namespace: 'shop',
    name,
    uid: `uid-${name}`,
    resourceVersion: '1',
    json: JSON.stringify(manifest),
  };
}

const v000 = rs('web-v000', '2026-01-01T10:00:00Z', 3);
const v001 = rs('web-v001', '2026-01-01T10:05:00Z', 1);
const v002 = rs('web-v002', '2026-01-01T10:09:00Z', 5);
const names = (objects: CachedObject[]) => objects.map((o) => o.name);

describe('cluster members', () => {
  it('matches the moniker parsed from the name, and the annotations over it', () => {
    const other = rs('web-canary-v000', '2026-01-01T10:00:00Z', 1);
    const annotated = rs('renamed-v007', '2026-01-01T10:00:00Z', 1, {
      'moniker.spinnaker.io/application': 'web',
      'moniker.spinnaker.io/cluster': 'web',
    });
    const wrongApp = rs('web-v003', '2026-01-01T10:00:00Z', 1, { 'moniker.spinnaker.io/application': 'shop' });
    expect(names(clusterMembers([v000, other, annotated, wrongApp, v001], 'web', 'web'))).toEqual([
      'web-v000',
      'renamed-v007',
      'web-v001',
    ]);
    expect(names(clusterMembers([v000, other], 'web-canary', 'web'))).toEqual(['web-canary-v000']);
    // Without an application (a dynamic target), the cluster alone decides, as in Clouddriver.
    expect(names(clusterMembers([v000, wrongApp], 'web'))).toEqual(['web-v000', 'web-v003']);
  });

  it('serialises coordinates with Clouddriver kind names', () => {
    expect(coordinatesOf(v000)).toEqual({ kind: 'replicaSet', namespace: 'shop', name: 'web-v000' });
  });
});

describe('dynamic criteria', () => {
  const cluster = [v002, v000, v001];

  it.each([
    ['oldest', 'web-v000'],
    ['newest', 'web-v002'],
    ['second_newest', 'web-v001'],
    ['smallest', 'web-v001'],
    ['largest', 'web-v002'],
  ] as const)('%s picks %s', (criteria, expected) => {
    expect(pickByCriteria(cluster, criteria)?.name).toBe(expected);
  });

  it('breaks one-second creationTimestamp ties by name, and sorts missing replicas first', () => {
    const a = rs('web-v000', '2026-01-01T10:00:00Z');
    const b = rs('web-v001', '2026-01-01T10:00:00Z', 0);
    expect(names(sortAscending([b, a], 'age'))).toEqual(['web-v000', 'web-v001']);
    expect(names(sortAscending([b, a], 'size'))).toEqual(['web-v000', 'web-v001']);
    expect(pickByCriteria([b, a], 'newest')?.name).toBe('web-v001');
  });

  it('has no second_newest with one version, nothing at all with none', () => {
    expect(pickByCriteria([v000], 'second_newest')).toBeUndefined();
    expect(pickByCriteria([v000], 'newest')?.name).toBe('web-v000');
    expect(pickByCriteria([], 'oldest')).toBeUndefined();
  });

  it('refuses an unknown criteria with a message naming the valid ones', () => {
    expect(parseCriteria('second_newest')).toBe('second_newest');
    expect(() => parseCriteria('youngest')).toThrow(/unknown criteria "youngest": use one of newest, second_newest/);
  });
});
