import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { accountRules, loadTopologySource, type Account } from '../../../src/compiler/index.js';
import { docs, find, MINIMAL, ROOT, synthText, tempDir, type K8sObject } from './_helpers.js';

const WRITE_VERBS = ['create', 'update', 'patch', 'delete', 'deletecollection', '*'];

type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };

function verbsFor(rules: Rule[], group: string, resource: string): string[] {
  return rules.filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r) => r.verbs);
}

const LB = (provider: string, internal: boolean): string => `
apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: lb }
pluginServer:
  grpc: { port: 443, exposure: { type: LoadBalancer, provider: ${provider}, internal: ${internal}, address: grpc.example.com } }
agents:
  - name: edge
    mode: agent
    accounts: [{ name: edge, serviceAccount: true, namespaces: [apps], access: read-only }]
`;

describe('synth', () => {
  it('is deterministic: same input and certificates give byte-identical files', async () => {
    await using certs = await tempDir();
    const a = await synthText(MINIMAL, certs.dir);
    const b = await synthText(MINIMAL, certs.dir);
    expect([...a.files.keys()]).toEqual([...b.files.keys()]);
    for (const [path, content] of a.files) expect(b.files.get(path), path).toBe(content);
    expect([...a.files.keys()]).toEqual([...a.files.keys()].sort());
    for (const content of a.files.values()) expect(content).not.toMatch(/creationTimestamp|\d{4}-\d\d-\d\dT\d\d:/);
  });

  it('writes an overlay, values file and manifests per place, plus summary.json in apply order', async () => {
    await using certs = await tempDir();
    const r = await synthText(MINIMAL, certs.dir);
    const places = ['account-ops', 'account-prod', 'plugin-server', 'agent-core'];
    expect(r.summary.places.map((p) => p.name)).toEqual(places);
    for (const p of places) {
      expect(r.files.has(`kustomize/overlays/${p}/kustomization.yaml`), p).toBe(true);
      expect(r.files.has(`helm/${p}.values.yaml`), p).toBe(true);
      expect(r.files.has(`manifests/${p}.yaml`), p).toBe(true);
    }
    expect(r.files.has('kustomize/base/agent/deployment.yaml')).toBe(true);
    expect(JSON.parse(r.files.get('summary.json') as string).places[0].requires).toEqual([]);
    expect(r.summary.places.find((p) => p.name === 'agent-core')?.requires).toEqual([
      'Secret kc (keys ops, prod: kubeconfigs) in namespace cp; `scale-agent kubeconfig TOPOLOGY --account ACCOUNT` ' +
        'mints each (accounts ops, prod)',
    ]);
  });

  it('emits a namespace that several places share with the same labels from each', async () => {
    // examples/mixed.yaml: the RBAC places of ops and remote-prod and the agent places of remote and edge all create
    // namespace scale-agent. Applied server-side (or by a GitOps tool per place) with different field managers, two
    // values of one label conflict; the real node's install met that as `conflict with "scale-agent":
    // .metadata.labels.app.kubernetes.io/component` after `scale-agent kubeconfig` had applied an account place.
    await using certs = await tempDir();
    const r = await synthText(readFileSync(join(ROOT, 'examples/mixed.yaml'), 'utf8'), certs.dir);
    const byPlace = r.summary.places.flatMap((p) =>
      docs(r.files.get(`manifests/${p.name}.yaml`) as string)
        .filter((o) => o.kind === 'Namespace' && o.metadata.name === 'scale-agent')
        .map((o) => ({ place: p.name, labels: o.metadata.labels })),
    );
    expect(byPlace.map((n) => n.place)).toEqual(['account-ops', 'account-remote-prod', 'agent-remote', 'agent-edge']);
    for (const n of byPlace) expect(n).toEqual({ place: n.place, labels: byPlace[0]!.labels });
    expect(byPlace[0]!.labels).toMatchObject({ 'pod-security.kubernetes.io/enforce': 'restricted' });
  });

  it('rolls a workload whose config changed: its pod template carries the config checksum, overlay and manifests alike', async () => {
    // `kubectl apply -k` of a changed topology updated the ConfigMap only; the plugin-server reads authorization at
    // start, so on the real node an agent group added to the topology was refused ("matches no authorization
    // rule") until the plugin-server restarted. The chart rolls its pods by checksum/config; the overlay must too.
    await using certs = await tempDir();
    const changed = MINIMAL.replace(
      '      - name: ops\n',
      '      - name: added\n        kubeconfigSecret: { name: kc, key: added }\n      - name: ops\n',
    );
    expect(changed).not.toBe(MINIMAL);
    const checksums = async (text: string) => {
      const r = await synthText(text, certs.dir);
      const overlay = docs(
        r.files.get('kustomize/overlays/plugin-server/workload/deployment-patch.yaml') as string,
      )[0]!;
      const manifest = find(
        docs(r.files.get('manifests/plugin-server.yaml') as string),
        'Deployment',
        'scale-agent-plugin-server',
      );
      const of = (d: K8sObject) =>
        ((d.spec as { template: { metadata?: { annotations?: Record<string, string> } } }).template.metadata
          ?.annotations ?? {})['checksum/config'];
      return { overlay: of(overlay), manifest: of(manifest) };
    };
    const before = await checksums(MINIMAL);
    const after = await checksums(changed);
    expect(before.overlay).toMatch(/^[0-9a-f]{64}$/);
    expect(before.manifest).toBe(before.overlay);
    expect(after.manifest).toBe(after.overlay);
    expect(after.overlay).not.toBe(before.overlay);
    expect(await checksums(MINIMAL)).toEqual(before);
  });

  it('gives namespaced read-only accounts Roles without write verbs and Secrets as list/watch only', async () => {
    await using certs = await tempDir();
    const r = await synthText(MINIMAL, certs.dir);
    const objs = docs(r.files.get('manifests/account-prod.yaml') as string);
    expect(objs.filter((o) => o.kind === 'ClusterRole')).toEqual([]);
    for (const ns of ['web', 'api']) {
      const role = find(objs, 'Role', 'scale-agent-account-prod', ns);
      const rules = role.rules as Rule[];
      for (const rule of rules) {
        for (const v of rule.verbs) expect(WRITE_VERBS).not.toContain(v);
        expect(rule.resources).not.toContain('*');
      }
      expect(verbsFor(rules, '', 'secrets').sort()).toEqual(['list', 'watch']);
      expect(verbsFor(rules, 'apps', 'deployments').sort()).toEqual(['get', 'list', 'watch']);
      const binding = find(objs, 'RoleBinding', 'scale-agent-account-prod', ns);
      expect(binding.subjects).toEqual([
        { kind: 'ServiceAccount', name: 'scale-agent-prod', namespace: 'scale-agent' },
      ]);
    }
    const token = find(objs, 'Secret', 'scale-agent-prod-token', 'scale-agent');
    expect(token.type).toBe('kubernetes.io/service-account-token');
  });

  it('gives cluster-wide read-write accounts a ClusterRole with writes on deployable kinds only', async () => {
    await using certs = await tempDir();
    const r = await synthText(MINIMAL, certs.dir);
    const objs = docs(r.files.get('manifests/account-ops.yaml') as string);
    const rules = find(objs, 'ClusterRole', 'scale-agent-account-ops').rules as Rule[];
    expect(verbsFor(rules, 'apps', 'deployments')).toEqual(expect.arrayContaining(['create', 'patch', 'delete']));
    expect(verbsFor(rules, 'apps', 'deployments/scale')).toEqual(['get', 'update', 'patch']);
    expect(verbsFor(rules, '', 'namespaces')).toEqual(['get', 'list', 'watch']);
    expect(verbsFor(rules, '', 'events')).toEqual(['get', 'list', 'watch']);
    expect(verbsFor(rules, '', 'pods/log')).toEqual(['get']);
    for (const rule of rules) {
      expect(rule.verbs).not.toContain('*');
      expect(rule.resources).not.toContain('*');
      expect(rule.apiGroups).not.toContain('*');
    }
  });

  it('computes rules from kinds and omitKinds, and keeps extraRules as written', () => {
    const { topology } = loadTopologySource(
      `apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: k }
pluginServer: {}
agents:
  - name: a
    mode: service
    accounts:
      - { name: only, kubeconfigSecret: { name: k, key: a }, kinds: [deployment, Rollout.argoproj.io, Policy.kyverno.io] }
      - { name: omit, kubeconfigSecret: { name: k, key: b }, omitKinds: [Secret, Event], access: read-only,
          rbac: { extraRules: [{ apiGroups: [metrics.k8s.io], resources: [pods], verbs: [get, list] }] } }
`,
      'k.yaml',
    );
    const [only, omit] = topology.agents[0]?.accounts as [Account, Account];
    const r1 = accountRules(only);
    expect(r1.rules.flatMap((r) => r.resources).sort()).toEqual([
      'deployments',
      'deployments/scale',
      'policies',
      'rollouts',
    ]);
    expect(r1.clusterRules).toEqual([]);
    const r2 = accountRules(omit);
    const resources = [...r2.rules, ...r2.clusterRules].flatMap((r) => r.resources);
    expect(resources).not.toContain('secrets');
    expect(resources).not.toContain('events');
    expect(r2.rules.at(-1)).toEqual({ apiGroups: ['metrics.k8s.io'], resources: ['pods'], verbs: ['get', 'list'] });
  });

  it('gives each account the rules of its own access, scope and extra rules, though accounts share computed rules', () => {
    const { topology } = loadTopologySource(
      `apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: k }
pluginServer: {}
agents:
  - name: a
    mode: service
    accounts:
      - { name: rw, kubeconfigSecret: { name: k, key: a } }
      - { name: rw2, kubeconfigSecret: { name: k, key: b } }
      - { name: ro, kubeconfigSecret: { name: k, key: c }, access: read-only }
      - { name: ns, kubeconfigSecret: { name: k, key: d }, namespaces: [team] }
      - { name: extra, kubeconfigSecret: { name: k, key: e },
          rbac: { extraRules: [{ apiGroups: [metrics.k8s.io], resources: [pods], verbs: [get] }] } }
`,
      'k.yaml',
    );
    const [rw, rw2, ro, ns, extra] = (topology.agents[0]?.accounts as Account[]).map((a) => accountRules(a));
    expect(rw2).toEqual(rw);
    expect(verbsFor([...(rw?.rules ?? [])], 'apps', 'deployments')).toContain('patch');
    expect(verbsFor([...(ro?.rules ?? [])], 'apps', 'deployments')).toEqual(['get', 'list', 'watch']);
    expect(rw?.clusterRules.flatMap((r) => r.resources)).toContain('namespaces');
    expect(ns?.clusterRules).toEqual([]);
    expect(extra?.rules.at(-1)).toEqual({ apiGroups: ['metrics.k8s.io'], resources: ['pods'], verbs: ['get'] });
    expect(rw?.rules.at(-1)).not.toEqual(extra?.rules.at(-1));
  });

  it('exposes gRPC on a Service with appProtocol grpc and provider load-balancer annotations', async () => {
    await using certs = await tempDir();
    const cases: [string, boolean, Record<string, string>][] = [
      [
        'aws',
        true,
        {
          'service.beta.kubernetes.io/aws-load-balancer-type': 'external',
          'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
          'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internal',
        },
      ],
      [
        'aws',
        false,
        {
          'service.beta.kubernetes.io/aws-load-balancer-type': 'external',
          'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
          'service.beta.kubernetes.io/aws-load-balancer-scheme': 'internet-facing',
        },
      ],
      ['gcp', true, { 'networking.gke.io/load-balancer-type': 'Internal' }],
      ['azure', true, { 'service.beta.kubernetes.io/azure-load-balancer-internal': 'true' }],
    ];
    for (const [provider, internal, annotations] of cases) {
      const r = await synthText(LB(provider, internal), certs.dir);
      const svc = find(
        docs(r.files.get('manifests/plugin-server.yaml') as string),
        'Service',
        'scale-agent-plugin-server-grpc',
      );
      expect(svc.metadata.annotations, provider).toEqual(annotations);
      expect((svc.spec as { type: string }).type).toBe('LoadBalancer');
      expect((svc.spec as { ports: unknown[] }).ports).toEqual([
        { name: 'grpc', port: 443, targetPort: 'grpc', protocol: 'TCP', appProtocol: 'grpc' },
      ]);
    }
  });

  it('mounts TLS and kubeconfigs into the agent and keeps the CA key out of every output file', async () => {
    await using certs = await tempDir();
    const r = await synthText(MINIMAL, certs.dir);
    const objs = docs(r.files.get('manifests/agent-core.yaml') as string);
    const dep = find(objs, 'Deployment', 'scale-agent-agent-core', 'cp');
    const pod = (
      dep.spec as {
        template: {
          spec: { volumes: { name: string; secret?: { secretName: string } }[]; automountServiceAccountToken: boolean };
        };
      }
    ).template.spec;
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.volumes.map((v) => [v.name, v.secret?.secretName])).toEqual([
      ['config', undefined],
      ['tls', 'scale-agent-agent-tls-core'],
      ['kubeconfig-0', 'kc'],
    ]);
    const secret = find(objs, 'Secret', 'scale-agent-agent-tls-core');
    expect(secret.type).toBe('kubernetes.io/tls');
    expect(Object.keys(secret.stringData as object).sort()).toEqual(['ca.crt', 'tls.crt', 'tls.key']);
    const { readFile } = await import('node:fs/promises');
    const caKey = (await readFile(`${certs.dir}/ca.key`, 'utf8')).trim();
    const keyBody = caKey.split('\n').slice(1, -1).join('');
    for (const [path, content] of r.files) expect(content.replace(/\s/g, '').includes(keyBody), path).toBe(false);
  });

  it('runs the agent on jemalloc with background purging, and only the agent', async () => {
    await using certs = await tempDir();
    const r = await synthText(MINIMAL, certs.dir);
    const envOf = (file: string, name: string): Record<string, unknown> => {
      const dep = find(docs(r.files.get(file) as string), 'Deployment', name);
      const c = (dep.spec as { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } })
        .template.spec.containers[0]!;
      return Object.fromEntries(c.env.map((e) => [e.name, e.value]));
    };
    expect(envOf('manifests/agent-core.yaml', 'scale-agent-agent-core')).toMatchObject({
      LD_PRELOAD: '/usr/local/lib/libjemalloc.so.2',
      MALLOC_CONF: 'background_thread:true',
    });
    expect(envOf('manifests/plugin-server.yaml', 'scale-agent-plugin-server')).not.toHaveProperty('LD_PRELOAD');
  });

  it('emits cert-manager Certificates instead of key material when asked', async () => {
    await using certs = await tempDir();
    const text = LB('gcp', true).replace(
      'pluginServer:\n',
      'pluginServer:\n  tls: { certificates: { source: cert-manager, issuerRef: { name: ca } } }\n',
    );
    const r = await synthText(text, certs.dir);
    const ps = docs(r.files.get('manifests/plugin-server.yaml') as string);
    const cert = find(ps, 'Certificate', 'scale-agent-plugin-server');
    expect(cert.spec).toMatchObject({
      secretName: 'scale-agent-plugin-server-tls',
      issuerRef: { name: 'ca', kind: 'ClusterIssuer', group: 'cert-manager.io' },
      dnsNames: expect.arrayContaining(['scale-agent-plugin-server-grpc.scale-agent.svc', 'grpc.example.com']),
    });
    // No TLS key material: the one Secret is the dynamic accounts' key synth generates in every install.
    expect(ps.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)).toEqual([
      'scale-agent-plugin-server-dynamic-accounts',
    ]);
    const agent = docs(r.files.get('manifests/agent-edge.yaml') as string);
    expect(find(agent, 'Certificate', 'scale-agent-agent-edge').spec).toMatchObject({
      secretName: 'scale-agent-agent-tls-edge',
      uris: ['spiffe://scale-agent/lb/agent/edge'],
      usages: ['digital signature', 'client auth'],
    });
    expect([...r.files.values()].some((c) => c.includes('PRIVATE KEY'))).toBe(false);
  });

  it('binds an agent-mode account to the agent ServiceAccount in the same place', async () => {
    await using certs = await tempDir();
    const r = await synthText(LB('gcp', true), certs.dir);
    const objs: K8sObject[] = docs(r.files.get('manifests/agent-edge.yaml') as string);
    expect(find(objs, 'Namespace', 'scale-agent')).toBeDefined();
    const binding = find(objs, 'RoleBinding', 'scale-agent-account-edge', 'apps');
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'scale-agent-agent-edge', namespace: 'scale-agent' },
    ]);
    const dep = find(objs, 'Deployment', 'scale-agent-agent-edge');
    expect(
      (dep.spec as { template: { spec: { automountServiceAccountToken: boolean } } }).template.spec
        .automountServiceAccountToken,
    ).toBe(true);
    expect(r.summary.places.map((p) => p.name)).toEqual(['plugin-server', 'agent-edge']);
  });
});
