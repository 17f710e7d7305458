import { describe, expect, it } from 'vitest';
import { lookupKind } from '../../../src/compiler/kinds.js';
import { accountRules } from '../../../src/compiler/rbac-rules.js';
import { resolveKind, SPINNAKER_KIND_MAP } from '../../../src/plugin-server/views/kinds.js';
import { manifestContainer } from '../../../src/plugin-server/api/manifest.js';
import { KINDS } from '../../../src/shared/kinds.js';
import { manifestNamesByNamespace } from '../../../src/shared/ops/results.js';

/** What an operation result calls an object, and what GET /manifests calls the same object once it is cached. */
function namesOf(apiVersion: string, kind: string, namespace = 'shop') {
  const obj = { apiVersion, kind, metadata: { name: 'x', namespace } };
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  const opName = manifestNamesByNamespace([obj])[namespace]![0]!;
  const restName = manifestContainer({
    account: 'a',
    group,
    apiVersion,
    kind,
    namespace,
    name: 'x',
    uid: 'u',
    resourceVersion: '1',
    json: JSON.stringify(obj),
  }).name;
  return { opName, restName };
}

describe('one kinds table', () => {
  // Clouddriver's KubernetesKind: registered kinds print lowerCamel; others print their `kind` in a native group and
  // `Kind.group` elsewhere. These were the disagreements between operation results and REST reads.
  it.each([
    ['v1', 'Endpoints', 'Endpoints x'],
    ['scheduling.k8s.io/v1', 'PriorityClass', 'PriorityClass x'],
    ['coordination.k8s.io/v1', 'Lease', 'Lease.coordination.k8s.io x'],
    ['stable.example.com/v1', 'CronTab', 'CronTab.stable.example.com x'],
    ['apps/v1', 'ReplicaSet', 'replicaSet x'],
    ['extensions/v1beta1', 'Deployment', 'deployment x'],
    ['autoscaling/v2', 'HorizontalPodAutoscaler', 'horizontalpodautoscaler x'],
  ])('%s %s is named %j by operation results and REST reads', (apiVersion, kind, expected) => {
    const { opName, restName } = namesOf(apiVersion, kind);
    expect(opName).toBe(expected);
    expect(restName).toBe(expected);
  });

  it('every row: the name both sides print resolves back to the same kind and group on REST reads', () => {
    for (const row of KINDS) {
      const apiVersion = row.group ? `${row.group}/v1` : 'v1';
      const { opName, restName } = namesOf(apiVersion, row.kind);
      expect(restName, `${apiVersion} ${row.kind}`).toBe(opName);
      const kindHalf = opName.slice(0, opName.indexOf(' '));
      const back = resolveKind(kindHalf);
      expect(back.kind, kindHalf).toBe(row.kind);
      // A kind Clouddriver prints without its group (native, unregistered) is looked up in any group.
      expect([row.group, undefined], kindHalf).toContain(back.group);
    }
  });

  it('aliases resolve to the registered kind and group', () => {
    expect(resolveKind('rs')).toEqual({ kind: 'ReplicaSet', group: 'apps' });
    expect(resolveKind('NETPOL')).toEqual({ kind: 'NetworkPolicy', group: 'networking.k8s.io' });
    expect(resolveKind('crd')).toEqual({ kind: 'CustomResourceDefinition', group: 'apiextensions.k8s.io' });
  });

  it('the RBAC view grants the plural resource of the same rows', () => {
    expect(lookupKind('endpoints')).toMatchObject({ group: '', resource: 'endpoints', deployable: false });
    expect(lookupKind('PriorityClass')).toMatchObject({ group: 'scheduling.k8s.io', resource: 'priorityclasses' });
    const { rules } = accountRules({
      kinds: ['Endpoints', 'Deployment'],
      omitKinds: [],
      namespaces: ['shop'],
      access: 'read-write',
      rbac: { extraRules: [] },
    } as unknown as Parameters<typeof accountRules>[0]);
    expect(rules).toContainEqual({ apiGroups: [''], resources: ['endpoints'], verbs: ['get', 'list', 'watch'] });
    expect(rules).toContainEqual({
      apiGroups: ['apps'],
      resources: ['deployments/scale'],
      verbs: ['get', 'update', 'patch'],
    });
  });

  it("Clouddriver's spinnakerKindMap is drawn from the same rows", () => {
    expect(SPINNAKER_KIND_MAP).toMatchObject({
      deployment: 'serverGroupManagers',
      replicaSet: 'serverGroups',
      pod: 'instances',
      service: 'loadBalancers',
      networkPolicy: 'securityGroups',
      secret: 'configs',
    });
  });
});
