import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { docs, find, ROOT, synthText, tempDir, topology } from './_helpers.js';

type Values = {
  pluginServer: { enabled: boolean; replicas?: number; image?: string; tls?: { source: string; certManager?: Cert } };
  agent: {
    enabled: boolean;
    replicas?: number;
    image?: string;
    kubeconfigSecrets?: string[];
    tls?: { source: string };
  };
  rbac: { accounts: { account: string; roleName: string }[] };
};
type Cert = { dnsNames: string[]; uris: string[]; duration: string; commonName: string };

const CERT_MANAGER = topology(
  'cm',
  `
pluginServer:
  namespace: spinnaker
  replicas: 2
  storage: { type: mysql, secretRef: { name: mysql, key: url } }
  tls: { mode: mtls, certificates: { source: cert-manager, issuerRef: { name: ca } } }
  grpc: { exposure: { type: LoadBalancer, provider: aws, address: grpc.example.com } }
agents:
  - name: edge
    mode: agent
    accounts: [{ name: edge-1, serviceAccount: true }]
  - name: fleet
    mode: infrastructure
    replicas: 3
    accounts:
      - { name: a, kubeconfigSecret: { name: kc-b, key: a } }
      - { name: b, kubeconfigSecret: { name: kc-a, key: b } }
`,
);

/** Each decision is made once in the model, so every projection of a place must carry the same value. */
describe('one model behind manifests, Helm values and summary.json', () => {
  it.each(['service', 'infrastructure', 'agent', 'mixed', 'cert-manager'])('%s: projections agree', async (name) => {
    await using tmp = await tempDir();
    const text =
      name === 'cert-manager' ? CERT_MANAGER : await readFile(join(ROOT, 'examples', `${name}.yaml`), 'utf8');
    const r = await synthText(text, tmp.dir);
    const orders = r.summary.places.map((p) => p.order);
    expect(orders).toEqual([...orders].sort((a, b) => a - b));
    for (const p of r.summary.places) {
      expect(p.orderReason, p.name).toMatch(/\w+ \w+/);
      const objects = docs(r.files.get(p.manifests) as string);
      const values = parse(r.files.get(p.helm) as string) as Values;
      const deployment = objects.find((o) => o.kind === 'Deployment') as
        | {
            spec: {
              replicas: number;
              template: {
                spec: {
                  containers: { image: string }[];
                  volumes?: { name: string; secret?: { secretName: string } }[];
                };
              };
            };
          }
        | undefined;
      const component =
        p.kind === 'plugin-server' ? values.pluginServer : p.kind === 'agent' ? values.agent : undefined;
      expect(component?.enabled ?? false, p.name).toBe(deployment !== undefined);
      if (deployment && component) {
        expect(component.replicas, p.name).toBe(deployment.spec.replicas);
        expect(component.image, p.name).toBe(deployment.spec.template.spec.containers[0]?.image);
      }
      if (p.kind === 'agent') {
        const mounted = (deployment?.spec.template.spec.volumes ?? [])
          .filter((v) => v.name.startsWith('kubeconfig-'))
          .map((v) => v.secret?.secretName);
        expect(values.agent.kubeconfigSecrets ?? [], p.name).toEqual(mounted);
      }
      const cert = objects.find((o) => o.kind === 'Certificate') as { spec: Record<string, unknown> } | undefined;
      const certValues = (values.pluginServer.tls ?? values.agent.tls) as { certManager?: Cert } | undefined;
      if (cert) {
        expect(certValues?.certManager?.dnsNames ?? [], p.name).toEqual(cert.spec.dnsNames ?? []);
        expect(certValues?.certManager?.uris ?? [], p.name).toEqual(cert.spec.uris ?? []);
        expect(certValues?.certManager?.duration, p.name).toBe(cert.spec.duration);
        expect(certValues?.certManager?.commonName, p.name).toBe(cert.spec.commonName);
      } else {
        expect(certValues?.certManager, p.name).toBeUndefined();
      }
      const roles = objects.filter((o) => o.kind === 'Role' || o.kind === 'ClusterRole').map((o) => o.metadata.name);
      for (const a of values.rbac.accounts) expect(roles, p.name).toContain(a.roleName);
      const placeOfAccount = r.summary.accounts.filter((a) => a.rbacPlace === p.name).map((a) => a.name);
      expect(values.rbac.accounts.map((a) => a.account).sort(), p.name).toEqual(placeOfAccount.sort());
    }
  });

  it('the cert-manager topology: SANs include the external address, and each agent group is found by its model', async () => {
    await using tmp = await tempDir();
    const r = await synthText(CERT_MANAGER, tmp.dir);
    const ps = parse(r.files.get('helm/plugin-server.values.yaml') as string) as Values;
    expect(ps.pluginServer.tls?.certManager?.dnsNames).toContain('grpc.example.com');
    expect(ps.pluginServer.tls?.certManager?.duration).toBe('2160h');
    const fleet = parse(r.files.get('helm/agent-fleet.values.yaml') as string) as Values;
    expect(fleet.agent.replicas).toBe(3);
    expect(fleet.agent.kubeconfigSecrets).toEqual(['kc-a', 'kc-b']);
  });

  it('REST authentication is on by default: config, mount, prerequisite and Spinnaker settings agree', async () => {
    await using tmp = await tempDir();
    const r = await synthText(CERT_MANAGER, tmp.dir);
    const objects = docs(r.files.get('manifests/plugin-server.yaml') as string);
    const cm = objects.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> };
    const config = parse(cm.data['config.yaml'] as string) as {
      http: { auth?: { tokensFile: string; trustedNetworks: string[] } };
    };
    expect(config.http.auth).toEqual({ tokensFile: '/etc/scale-agent/rest-tokens/tokens', trustedNetworks: [] });
    const pod = (
      objects.find((o) => o.kind === 'Deployment') as unknown as {
        spec: {
          template: {
            spec: {
              volumes: { name: string; secret?: { secretName: string } }[];
              containers: { volumeMounts: { name: string; mountPath: string }[] }[];
            };
          };
        };
      }
    ).spec.template.spec;
    expect(pod.volumes).toContainEqual({ name: 'rest-tokens', secret: { secretName: 'scale-agent-rest-tokens' } });
    expect(pod.containers[0]?.volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'rest-tokens', mountPath: '/etc/scale-agent/rest-tokens' }),
    );
    const ps = r.summary.places.find((p) => p.name === 'plugin-server');
    expect(ps?.requires.some((x) => x.startsWith('Secret scale-agent-rest-tokens (key tokens'))).toBe(true);
    expect(r.summary.spinnaker.join('\n')).toMatch(/no trusted networks/);
    const values = parse(r.files.get('helm/plugin-server.values.yaml') as string) as {
      pluginServer: Record<string, unknown>;
    };
    expect(values.pluginServer.restTokensSecret).toBe('scale-agent-rest-tokens');
  });

  it('rest.auth: trusted networks reach the config and the summary; enabled false removes auth, mount and Secret', async () => {
    await using tmp = await tempDir();
    const trusted = CERT_MANAGER.replace(
      '  namespace: spinnaker\n',
      '  namespace: spinnaker\n  rest: { auth: { trustedNetworks: [10.8.0.0/14] } }\n',
    );
    const t = await synthText(trusted, tmp.dir);
    const cfg = (o: ReturnType<typeof docs>) =>
      parse(
        (o.find((x) => x.kind === 'ConfigMap') as unknown as { data: Record<string, string> }).data[
          'config.yaml'
        ] as string,
      ) as {
        http: { auth?: { trustedNetworks: string[] } };
      };
    expect(cfg(docs(t.files.get('manifests/plugin-server.yaml') as string)).http.auth?.trustedNetworks).toEqual([
      '10.8.0.0/14',
    ]);
    expect(t.summary.spinnaker.join('\n')).toContain('without a token from 10.8.0.0/14');
    const open = CERT_MANAGER.replace(
      '  namespace: spinnaker\n',
      '  namespace: spinnaker\n  rest: { auth: { enabled: false } }\n',
    );
    const o = await synthText(open, tmp.dir);
    const text = o.files.get('manifests/plugin-server.yaml') as string;
    expect(cfg(docs(text)).http.auth).toBeUndefined();
    expect(text).not.toContain('rest-tokens');
    expect(o.summary.places.find((p) => p.name === 'plugin-server')?.requires.join()).not.toContain('rest-tokens');
  });

  it('kubeconfigSecret.watch: the agent reads the key by secret reference, may get and watch only that Secret', async () => {
    await using tmp = await tempDir();
    const text = topology(
      'live',
      `
pluginServer: { namespace: spinnaker }
agents:
  - name: fleet
    mode: service
    namespace: agents
    accounts:
      - { name: a, kubeconfigSecret: { name: kc-mounted, key: a } }
      - { name: b, kubeconfigSecret: { name: kc-live, key: b, watch: true } }
      - { name: c, kubeconfigSecret: { name: kc-live, key: c, watch: true } }
`,
    );
    const r = await synthText(text, tmp.dir);
    const objects = docs(r.files.get('manifests/agent-fleet.yaml') as string);
    const config = parse(
      (find(objects, 'ConfigMap', 'scale-agent-agent-config-fleet') as unknown as { data: Record<string, string> })
        .data['config.yaml'] as string,
    ) as { kubernetes: { accounts: { name: string; kubeconfigFile: string }[] } };
    expect(config.kubernetes.accounts.map((a) => [a.name, a.kubeconfigFile])).toEqual([
      ['a', '/etc/scale-agent/kubeconfigs/kc-mounted/a'],
      ['b', 'encryptedFile:k8s!n:kc-live!k:b'],
      ['c', 'encryptedFile:k8s!n:kc-live!k:c'],
    ]);
    const pod = (
      find(objects, 'Deployment', 'scale-agent-agent-fleet') as unknown as {
        spec: {
          template: { spec: { automountServiceAccountToken: boolean; volumes: { secret?: { secretName: string } }[] } };
        };
      }
    ).spec.template.spec;
    // The watched Secret is read through the API server with the pod's token, never mounted.
    expect(pod.automountServiceAccountToken).toBe(true);
    expect(pod.volumes.flatMap((v) => (v.secret ? [v.secret.secretName] : []))).not.toContain('kc-live');
    expect(find(objects, 'Role', 'scale-agent-agent-secrets-fleet', 'agents').rules).toEqual([
      { apiGroups: [''], resources: ['secrets'], resourceNames: ['kc-live'], verbs: ['get', 'watch'] },
    ]);
    expect(find(objects, 'RoleBinding', 'scale-agent-agent-secrets-fleet', 'agents')).toMatchObject({
      roleRef: { kind: 'Role', name: 'scale-agent-agent-secrets-fleet' },
      subjects: [{ kind: 'ServiceAccount', name: 'scale-agent-agent-fleet', namespace: 'agents' }],
    });
    const values = parse(r.files.get('helm/agent-fleet.values.yaml') as string) as Values & {
      agent: { watchedSecrets?: string[] };
    };
    expect(values.agent.kubeconfigSecrets).toEqual(['kc-mounted']);
    expect(values.agent.watchedSecrets).toEqual(['kc-live']);
    const place = r.summary.places.find((p) => p.name === 'agent-fleet');
    expect(place?.requires.join('\n')).toMatch(/Secret kc-live \(keys b, c: kubeconfigs, read live\)/);
  });
});
