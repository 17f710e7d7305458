import { App, Chart } from 'cdk8s';
import type { Construct } from 'constructs';
import { describe, expect, it } from 'vitest';
import {
  AccountRbac,
  Namespace,
  SecretReaderRbac,
  ServiceAccount,
  accountRbacManifests,
  namespaceManifests,
  secretReaderRbacManifests,
  serviceAccountManifests,
  type IdentifiedManifest,
} from '../../../cdk8s/index.js';

// synth takes these constructs' manifests as data, without a cdk8s App; charts built from the constructs must give
// exactly the same objects, or `synth` and a user's cdk8s app would disagree.
function rendered(add: (c: Construct) => void): unknown[] {
  const chart = new Chart(new App({ outdir: '/nonexistent' }), 'test', { disableResourceNameHashes: true });
  add(chart);
  return chart.toJson();
}

const data = (ms: IdentifiedManifest[]): unknown[] => ms.map(([, m]) => JSON.parse(JSON.stringify(m)));

const rules = [
  { apiGroups: [''], resources: ['configmaps', 'pods'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get'] },
];
const subject = { name: 'spinnaker-a', namespace: 'scale-agent' };

describe('construct manifests', () => {
  it('AccountRbac: a Role and binding per namespace, or one ClusterRole and binding', () => {
    for (const namespaces of [['team-a', 'team-b'], []]) {
      const props = { account: 'a', roleName: 'spinnaker-a', subject, namespaces, rules, clusterRules: rules };
      const objs = rendered((c) => new AccountRbac(c, 'rbac', props));
      expect(objs).toHaveLength(namespaces.length === 0 ? 2 : 2 * namespaces.length);
      expect(objs).toEqual(data(accountRbacManifests(props)));
    }
  });

  it('SecretReaderRbac, Namespace and ServiceAccount (with and without its token Secret)', () => {
    const reader = { roleName: 'reader', subject, secrets: ['kc-1', 'kc-2'], instance: 'group-1' };
    expect(rendered((c) => new SecretReaderRbac(c, 'r', reader))).toEqual(data(secretReaderRbacManifests(reader)));
    const ns = { name: 'team-a', labels: { a: 'b' } };
    expect(rendered((c) => new Namespace(c, 'ns', ns))).toEqual(data(namespaceManifests(ns)));
    for (const tokenSecret of [true, false]) {
      const sa = { name: 'sa', namespace: 'scale-agent', labels: { a: 'b' }, tokenSecret };
      const objs = rendered((c) => new ServiceAccount(c, 'sa', sa));
      expect(objs).toHaveLength(tokenSecret ? 2 : 1);
      expect(objs).toEqual(data(serviceAccountManifests(sa)));
    }
  });
});
