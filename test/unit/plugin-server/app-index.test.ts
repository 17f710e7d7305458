import { describe, expect, it } from 'vitest';
import { DEFAULT_INDEX_OPTIONS, indexOptionsOf } from '../../../src/plugin-server/cache/store.js';
import { indexKeys } from '../../../src/plugin-server/views/app-index.js';
import { healthState, podHealth } from '../../../src/plugin-server/views/instance.js';
import { toResource } from '../../../src/plugin-server/views/resource.js';

const managed = { 'moniker.spinnaker.io/application': 'shop', 'moniker.spinnaker.io/cluster': 'deployment shop' };
const meta = (name: string, annotations: Record<string, string> = {}, extra: Record<string, unknown> = {}) => ({
  metadata: { name, namespace: 'ns', annotations, ...extra },
});

describe('application index keys (what Clouddriver relates to applications and clusters)', () => {
  it('server groups and managers get an application and a cluster; load balancers and firewalls an application', () => {
    expect(indexKeys('apps', 'ReplicaSet', meta('shop-abc', managed), DEFAULT_INDEX_OPTIONS)).toEqual({
      application: 'shop',
      cluster: 'deployment shop',
      owner: '',
    });
    expect(indexKeys('apps', 'Deployment', meta('shop', managed), DEFAULT_INDEX_OPTIONS).cluster).toBe(
      'deployment shop',
    );
    expect(indexKeys('', 'Service', meta('shop-lb', managed), DEFAULT_INDEX_OPTIONS)).toEqual({
      application: 'shop',
      cluster: '',
      owner: '',
    });
    expect(indexKeys('networking.k8s.io', 'NetworkPolicy', meta('deny'), DEFAULT_INDEX_OPTIONS).application).toBe(
      'deny',
    );
  });

  it('without annotations the name is parsed as Frigga does: app before the first dash, cluster without -vNNN', () => {
    expect(indexKeys('apps', 'ReplicaSet', meta('legacy-web-v003'), DEFAULT_INDEX_OPTIONS)).toEqual({
      application: 'legacy',
      cluster: 'legacy-web',
      owner: '',
    });
  });

  it('other kinds only with cacheAllApplicationRelationships; Pods are found through their controller', () => {
    const pod = meta('shop-abc-x', managed, {
      ownerReferences: [
        { kind: 'Node', uid: 'not-controller' },
        { kind: 'ReplicaSet', uid: 'rs-uid', controller: true },
      ],
    });
    expect(indexKeys('', 'Pod', pod, DEFAULT_INDEX_OPTIONS)).toEqual({ owner: 'rs-uid' });
    expect(indexKeys('', 'ConfigMap', meta('shop-cfg', managed), DEFAULT_INDEX_OPTIONS)).toEqual({});
    const all = indexOptionsOf({ cacheAllApplicationRelationships: true });
    expect(indexKeys('', 'ConfigMap', meta('shop-cfg', managed), all)).toEqual({
      application: 'shop',
      cluster: '',
      owner: '',
    });
    expect(indexKeys('', 'Pod', pod, all)).toEqual({ application: 'shop', cluster: '', owner: 'rs-uid' });
  });

  it('onlySpinnakerManaged leaves objects without the application annotation out of every application', () => {
    const only = indexOptionsOf({ onlySpinnakerManaged: true });
    expect(indexKeys('apps', 'ReplicaSet', meta('legacy-web-v003'), only).application ?? '').toBe('');
    expect(indexKeys('apps', 'ReplicaSet', meta('shop-abc', managed), only).application).toBe('shop');
  });

  it('objects without metadata or with oversized names get no keys instead of failing ingest', () => {
    expect(indexKeys('apps', 'ReplicaSet', {}, DEFAULT_INDEX_OPTIONS)).toEqual({});
    const long = 'a'.repeat(300);
    expect(
      indexKeys('apps', 'ReplicaSet', meta('x', { 'moniker.spinnaker.io/application': long }), DEFAULT_INDEX_OPTIONS)
        .application ?? '',
    ).toBe('');
  });
});

describe('instance health as Clouddriver reports it', () => {
  const pod = (status: unknown) =>
    toResource({
      account: 'a',
      group: '',
      apiVersion: 'v1',
      kind: 'Pod',
      namespace: 'ns',
      name: 'p',
      uid: 'u',
      resourceVersion: '1',
      json: JSON.stringify({ metadata: { name: 'p' }, ...(status === undefined ? {} : { status }) }),
    });

  it('Running with every container ready is Up; an unready container makes it Down; Pending is Down', () => {
    const ready = podHealth(pod({ phase: 'Running', containerStatuses: [{ name: 'main', ready: true }] }));
    expect(ready).toEqual([
      { state: 'Up', source: 'Pod', type: 'kubernetes/pod', platform: 'platform' },
      { state: 'Up', source: 'Container main', type: 'kubernetes/container', platform: 'platform' },
    ]);
    expect(healthState(ready)).toBe('Up');
    const unready = podHealth(
      pod({
        phase: 'Running',
        containerStatuses: [
          { name: 'a', ready: true },
          { name: 'b', ready: false },
        ],
      }),
    );
    expect(healthState(unready)).toBe('Down');
    expect(healthState(podHealth(pod({ phase: 'Pending' })))).toBe('Down');
  });

  it('a finished Pod is judged by its containers; no status at all is Unknown', () => {
    expect(healthState(podHealth(pod({ phase: 'Succeeded', containerStatuses: [{ name: 'm', ready: true }] })))).toBe(
      'Up',
    );
    expect(podHealth(pod(undefined))).toEqual([]);
    expect(healthState([])).toBe('Unknown');
  });
});
