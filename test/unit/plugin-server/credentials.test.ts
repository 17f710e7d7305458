import { describe, expect, it } from 'vitest';
import { credentialsDetail, credentialsSummary, fiatPermissions } from '../../../src/plugin-server/api/credentials.js';
import type { AccountRecord } from '../../../src/plugin-server/cache/store.js';
import { accountRecord } from '../../infra/records.js';

const record = (over: Partial<AccountRecord> = {}): AccountRecord => accountRecord({ name: 'prod', ...over });

describe('credentials view (Clouddriver /credentials for Kubernetes accounts)', () => {
  it('permissions as Fiat reads them: roles trimmed, lower-cased, deduplicated; empty authorizations left out', () => {
    expect(fiatPermissions({ READ: ['Team-A', ' ops ', 'team-a', ''], WRITE: ['OPS'] })).toEqual({
      READ: ['team-a', 'ops'],
      WRITE: ['ops'],
    });
    expect(fiatPermissions({ READ: ['viewers'], WRITE: [] })).toEqual({ READ: ['viewers'] });
    expect(fiatPermissions({ READ: [], WRITE: [] })).toEqual({});
  });

  it('the summary has exactly the keys CredentialsController keeps without expand, plus type and flags', () => {
    const s = credentialsSummary(record({ permissions: { READ: ['dev'], WRITE: ['ops'] }, namespaces: ['a'] }));
    expect(s).toEqual({
      name: 'prod',
      environment: 'prod',
      accountType: 'prod',
      cloudProvider: 'kubernetes',
      type: 'kubernetes',
      requiredGroupMembership: [],
      permissions: { READ: ['dev'], WRITE: ['ops'] },
      challengeDestructiveActions: false,
      primaryAccount: false,
    });
  });

  it('the detail adds namespaces, kinds, the kind map and the account options', () => {
    const d = credentialsDetail(
      record({
        namespaces: ['shop', 'payments'],
        kinds: ['Deployment', 'ConfigMap'],
        onlySpinnakerManaged: true,
        cacheAllApplicationRelationships: true,
      }),
      ['default', 'shop', 'payments', 'kube-system'],
    );
    expect(d).toMatchObject({
      name: 'prod',
      permissions: {},
      cacheThreads: 1,
      namespaces: ['shop', 'payments'],
      omitNamespaces: [],
      kinds: ['Deployment', 'ConfigMap'],
      omitKinds: [],
      dockerRegistries: [],
      onlySpinnakerManaged: true,
      cacheAllApplicationRelationships: true,
      enabled: true,
    });
    expect(d.spinnakerKindMap).toMatchObject({ deployment: 'serverGroupManagers', service: 'loadBalancers' });
  });

  it("without configured namespaces lists the cluster's namespaces minus omitNamespaces", () => {
    const d = credentialsDetail(record({ omitNamespaces: ['kube-system'], omitKinds: ['Secret'] }), [
      'default',
      'kube-system',
      'shop',
    ]);
    expect(d).toMatchObject({
      namespaces: ['default', 'shop'],
      omitNamespaces: ['kube-system'],
      omitKinds: ['Secret'],
    });
  });
});
