import { describe, expect, it } from 'vitest';
import type { AccountConfig } from '../../../src/agent/config.js';
import { kindMatches, omitNamespacesSelector, selectResources, watchNamespaces } from '../../../src/agent/filters.js';
import type { ApiResource } from '../../../src/agent/kube/resources.js';
import { agentAccount } from '../../infra/records.js';

const r = (kind: string, group = '', namespaced = true): ApiResource => ({
  kind,
  group,
  version: 'v1',
  resource: `${kind.toLowerCase()}s`,
  namespaced,
});
const all = [
  r('Pod'),
  r('Deployment', 'apps'),
  r('Ingress', 'networking.k8s.io'),
  r('Ingress', 'extensions'),
  r('Namespace', '', false),
  r('Widget', 'example.com'),
];
const account = (over: Partial<AccountConfig>): AccountConfig =>
  agentAccount({ name: 'a', serviceAccount: true, ...over });
const names = (rs: ApiResource[]): string[] => rs.map((x) => (x.group ? `${x.kind}.${x.group}` : x.kind));

describe('kind filters', () => {
  it('matches Kind in every group and Kind.group in one, case-insensitively', () => {
    expect(kindMatches('Ingress', r('Ingress', 'extensions'))).toBe(true);
    expect(kindMatches('Ingress.networking.k8s.io', r('Ingress', 'extensions'))).toBe(false);
    expect(kindMatches('Ingress.networking.k8s.io', r('Ingress', 'networking.k8s.io'))).toBe(true);
    expect(kindMatches('replicaSet', r('ReplicaSet', 'apps'))).toBe(true);
    expect(kindMatches('Pod', r('PodTemplate'))).toBe(false);
  });

  it('without kinds, caches the kinds Spinnaker uses, plus the custom resources the account lists', () => {
    const cluster = [
      ...all,
      r('Lease', 'coordination.k8s.io'),
      r('EndpointSlice', 'discovery.k8s.io'),
      r('Deployment', 'example.com'),
      r('ClusterRole', 'rbac.authorization.k8s.io', false),
    ];
    expect(names(selectResources(account({}), cluster))).toEqual([
      'Pod',
      'Deployment.apps',
      'Ingress.networking.k8s.io',
      'Namespace',
    ]);
    expect(names(selectResources(account({ customResources: ['Widget.example.com'] }), cluster))).toContain(
      'Widget.example.com',
    );
    // Listing kinds replaces the defaults: Leases can still be cached on purpose.
    expect(names(selectResources(account({ kinds: ['Lease'] }), cluster))).toEqual(['Lease.coordination.k8s.io']);
  });

  it('selects by kinds, omitKinds and scope', () => {
    const everything = account({ customResources: ['Widget.example.com', 'Ingress.extensions'] });
    expect(names(selectResources(everything, all))).toEqual(names(all));
    expect(names(selectResources(account({ kinds: ['Deployment', 'Ingress.networking.k8s.io'] }), all))).toEqual([
      'Deployment.apps',
      'Ingress.networking.k8s.io',
    ]);
    expect(names(selectResources({ ...everything, omitKinds: ['Ingress', 'Pod'] }, all))).toEqual([
      'Deployment.apps',
      'Namespace',
      'Widget.example.com',
    ]);
    expect(names(selectResources(account({ onlyNamespacedResources: true }), all))).not.toContain('Namespace');
    expect(names(selectResources(account({ namespaces: ['x'] }), all))).not.toContain('Namespace');
  });

  it('one watch per listed namespace; omitNamespaces becomes a field selector', () => {
    expect(watchNamespaces(account({ namespaces: ['x', 'y'] }), r('Pod'))).toEqual(['x', 'y']);
    expect(watchNamespaces(account({}), r('Pod'))).toEqual(['']);
    expect(watchNamespaces(account({ namespaces: ['x'] }), r('Namespace', '', false))).toEqual(['']);
    expect(omitNamespacesSelector(account({ omitNamespaces: ['kube-system', 'a'] }), r('Pod'))).toBe(
      'metadata.namespace!=kube-system,metadata.namespace!=a',
    );
    expect(omitNamespacesSelector(account({ omitNamespaces: ['a'] }), r('Namespace', '', false))).toBeUndefined();
  });
});
