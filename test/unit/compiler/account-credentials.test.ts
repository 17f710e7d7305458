import { describe, expect, it } from 'vitest';
import { accountCredentials, loadTopologySource, synthesize } from '../../../src/compiler/index.js';
import { docs, MINIMAL } from './_helpers.js';

const MIXED = `${MINIMAL.trimEnd()}
        context: ops-admin
      - name: own
        kubeconfigSecret: { name: kc, key: own }
        rbac: { create: false }
  - name: edge
    mode: agent
    namespace: edge-ns
    accounts: [{ name: edge, serviceAccount: true }]
`.replace(
  'pluginServer:\n  namespace: cp',
  'pluginServer:\n  namespace: cp\n  grpc: { exposure: { type: External, address: grpc.example:443 } }\n  tls: { mode: insecure }',
);

const topology = () => loadTopologySource(MIXED, 'topology.yaml').topology;

describe('accountCredentials', () => {
  it("takes the account place's objects exactly as synth renders them, and where the agent mounts the kubeconfig", () => {
    const t = topology();
    const c = accountCredentials(t, 'ops');
    const synthed = docs(
      synthesize(t, { version: '0.0.0', secrets: { dynamicAccountsKey: 'unused' } }).files.get(
        'manifests/account-ops.yaml',
      ) ?? '',
    );
    expect(c.objects).toEqual(synthed);
    expect(c.objects.map((o) => o.kind).sort()).toEqual([
      'ClusterRole',
      'ClusterRoleBinding',
      'Namespace',
      'Secret',
      'ServiceAccount',
    ]);
    expect(c.serviceAccount).toEqual({ name: 'scale-agent-ops', namespace: 'scale-agent' });
    expect(c.tokenSecret).toBe('scale-agent-ops-token');
    expect(c.kubeconfigSecret).toEqual({ name: 'kc', key: 'ops', namespace: 'cp' });
    expect(c.context).toBe('ops-admin');
    expect(accountCredentials(t, 'prod').context).toBeUndefined();
  });

  it('refuses unknown accounts (naming the kubeconfig ones), agent-mode accounts and accounts without generated RBAC', () => {
    const t = topology();
    expect(() => accountCredentials(t, 'nope')).toThrow("has no account 'nope'; kubeconfig accounts: prod, ops, own");
    expect(() => accountCredentials(t, 'edge')).toThrow(/mode agent: .*needs no kubeconfig/);
    expect(() => accountCredentials(t, 'own')).toThrow(
      /rbac\.create: false \(\/agents\/0\/accounts\/2\/rbac\/create\)/,
    );
  });
});
