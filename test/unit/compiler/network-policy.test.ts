import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { checkTopology, loadTopologySource } from '../../../src/compiler/index.js';
import { docs, synthText, tempDir, type K8sObject } from './_helpers.js';

/** In-cluster: one agent group beside the plugin-server. Remote: another through an external address. */
const topology = (extra: string, remote = false) => `
apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: np }
pluginServer:
  namespace: spinnaker
  tls: { mode: insecure }
  grpc: { exposure: ${remote ? '{ type: External, address: "grpc.example.com:8443" }' : '{ type: ClusterIP }'} }
${extra}
agents:
  - name: core
    mode: service
    accounts: [{ name: here, kubeconfigSecret: { name: kc, key: here } }]
${
  remote
    ? `  - name: fleet
    mode: infrastructure
    accounts: [{ name: there, kubeconfigSecret: { name: kc, key: there } }]`
    : ''
}
`;

type Spec = {
  policyTypes: string[];
  ingress?: { ports: { port: string | number; protocol: string }[]; from?: Record<string, unknown>[] }[];
  egress?: { ports: { port: string | number; protocol: string }[]; to?: Record<string, unknown>[] }[];
};

async function policies(text: string): Promise<{ objects: Map<string, K8sObject>; values: Map<string, unknown> }> {
  await using tmp = await tempDir();
  const r = await synthText(text, tmp.dir);
  const objects = new Map<string, K8sObject>();
  const values = new Map<string, unknown>();
  for (const p of r.summary.places) {
    const np = docs(r.files.get(p.manifests) as string).find((o) => o.kind === 'NetworkPolicy');
    if (np) objects.set(p.name, np);
    const v = parse(r.files.get(p.helm) as string) as Record<string, { networkPolicy?: unknown }>;
    const component = p.name === 'plugin-server' ? 'pluginServer' : 'agent';
    if (v[component]?.networkPolicy) values.set(p.name, v[component].networkPolicy);
  }
  return { objects, values };
}

const spec = (o: K8sObject | undefined): Spec => o?.spec as Spec;

describe('NetworkPolicies in generated installs', () => {
  it('are on by default: REST from the namespace, gRPC from agent pods when agents dial the ClusterIP Service', async () => {
    const { objects, values } = await policies(topology(''));
    expect([...objects.keys()].sort()).toEqual(['agent-core', 'plugin-server']);
    const ps = spec(objects.get('plugin-server'));
    expect(ps.policyTypes).toEqual(['Ingress']);
    expect(ps.ingress?.map((r) => r.ports[0]?.port)).toEqual(['grpc', 'http']);
    expect(ps.ingress?.[0]?.from).toEqual([
      {
        namespaceSelector: {},
        podSelector: {
          matchExpressions: [
            { key: 'app.kubernetes.io/name', operator: 'In', values: ['scale-agent'] },
            { key: 'app.kubernetes.io/component', operator: 'In', values: ['agent'] },
          ],
        },
      },
    ]);
    expect(ps.ingress?.[1]?.from).toEqual([{ podSelector: {} }]);
    // The chart gets the same peers as values, so `helm template` renders the same object.
    expect(values.get('plugin-server')).toEqual({
      enabled: true,
      grpcFrom: ps.ingress?.[0]?.from,
      httpFrom: ps.ingress?.[1]?.from,
    });
  });

  it('an agent admits only the /metrics scrape from its namespace and dials DNS, the API servers and the plugin-server only', async () => {
    const { objects, values } = await policies(topology(''));
    const agent = spec(objects.get('agent-core'));
    expect(agent.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(agent.ingress).toEqual([{ ports: [{ port: 'health', protocol: 'TCP' }], from: [{ podSelector: {} }] }]);
    expect(agent.egress).toEqual([
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
      { ports: [443, 6443, 9091].map((port) => ({ port, protocol: 'TCP' })) },
    ]);
    expect(values.get('agent-core')).toEqual({
      enabled: true,
      metricsFrom: [{ podSelector: {} }],
      egressPorts: [443, 6443, 9091],
      egressTo: [],
    });
  });

  it('every agent group has a metrics Service on its health port, in manifests and chart values alike', async () => {
    await using tmp = await tempDir();
    const r = await synthText(topology('', true), tmp.dir);
    for (const p of r.summary.places.filter((x) => x.name.startsWith('agent-'))) {
      const objects = docs(r.files.get(p.manifests) as string);
      const deployment = objects.find((o) => o.kind === 'Deployment');
      const service = objects.find((o) => o.kind === 'Service');
      expect({ place: p.name, name: service?.metadata.name, spec: service?.spec }).toEqual({
        place: p.name,
        name: deployment?.metadata.name,
        spec: {
          type: 'ClusterIP',
          selector: (deployment?.spec as { selector: { matchLabels: unknown } }).selector.matchLabels,
          ports: [{ name: 'health', port: 8081, targetPort: 'health', protocol: 'TCP', appProtocol: 'http' }],
        },
      });
      const values = parse(r.files.get(p.helm) as string) as { agent: { metricsService?: unknown } };
      expect({ place: p.name, metricsService: values.agent.metricsService }).toEqual({
        place: p.name,
        metricsService: { enabled: true },
      });
    }
  });

  it('through an external address: gRPC from anywhere, and remote agents dial its port', async () => {
    const { objects } = await policies(topology('', true));
    expect(spec(objects.get('plugin-server')).ingress?.[0]?.from).toBeUndefined();
    const remote = spec(objects.get('agent-fleet')).egress?.[1]?.ports.map((p) => p.port);
    expect(remote).toEqual([443, 6443, 8443, 9091]);
    // The service-mode agent still dials the in-cluster Service.
    expect(spec(objects.get('agent-core')).egress?.[1]?.ports.map((p) => p.port)).toEqual([443, 6443, 9091]);
  });

  it("admit REST and the agents' /metrics from the topology's Spinnaker namespaces too", async () => {
    const { objects } = await policies(topology('networkPolicies: { spinnakerNamespaces: [spin, monitoring] }'));
    const peers = [
      { podSelector: {} },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'spin' } } },
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } },
    ];
    expect(spec(objects.get('plugin-server')).ingress?.[1]?.from).toEqual(peers);
    expect(spec(objects.get('agent-core')).ingress).toEqual([
      { ports: [{ port: 'health', protocol: 'TCP' }], from: peers },
    ]);
  });

  it('are left out, in manifests and values, when the topology turns them off', async () => {
    const { objects, values } = await policies(topology('networkPolicies: { enabled: false }'));
    expect(objects.size).toBe(0);
    expect(values.size).toBe(0);
  });

  it('turned off, `scale-agent check` warns at the key (SA014); on, it says nothing', () => {
    const off = topology('networkPolicies: { enabled: false }');
    const { topology: t, source } = loadTopologySource(off, 'inline.yaml');
    const found = checkTopology(t, source).violations.filter((v) => v.rule === 'SA014');
    expect(found).toEqual([
      expect.objectContaining({
        severity: 'warning',
        path: '/networkPolicies/enabled',
        line: off.split('\n').findIndex((l) => l.includes('networkPolicies')) + 1,
      }),
    ]);
    const on = loadTopologySource(topology(''), 'inline.yaml');
    expect(checkTopology(on.topology, on.source).violations.filter((v) => v.rule === 'SA014')).toEqual([]);
  });
});
