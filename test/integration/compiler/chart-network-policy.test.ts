/**
 * The chart's opt-in NetworkPolicies and ServiceMonitor, and each component's extraEnv/extraVolumes/extraVolumeMounts,
 * rendered by the real helm: absent unless enabled; for one synthesized place the same objects as
 * kustomize/components/ give that place's overlay under the real kustomize (one set of rules, two packagings); and
 * installed for real by helm into a restricted namespace of a control plane of the test's own, which has a stand-in
 * ServiceMonitor CRD (test/fixtures/crds/) whose strict field validation checks the ServiceMonitor.
 */
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { ControlPlane, helm, kustomize, run } from '../../infra/index.js';
import { expectAllPodsAdmitted, RESTRICTED } from '../../infra/pod-security.js';
import { synthForComponents } from '../../infra/synth-out.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const CHART = join(ROOT, 'charts', 'scale-agent');
const STAND_IN_CRD = join(ROOT, 'test', 'fixtures', 'crds', 'servicemonitor-stand-in.yaml');

interface Obj {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

const OPTIONAL_KINDS = new Set(['NetworkPolicy', 'ServiceMonitor']);

function parse(text: string): Obj[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

async function template(args: string[]): Promise<Obj[]> {
  return parse((await helm(['template', 'r', CHART, '--namespace', 'ns', ...args])).stdout);
}

const BOTH = ['--set', 'pluginServer.enabled=true,agent.enabled=true'];
const ON = [
  '--set',
  'pluginServer.networkPolicy.enabled=true,pluginServer.serviceMonitor.enabled=true,agent.networkPolicy.enabled=true,agent.serviceMonitor.enabled=true',
];

type Pod = {
  containers: { env: { name: string }[]; volumeMounts: { name: string; mountPath: string }[] }[];
  volumes: { name: string }[];
};
const podOf = (objects: Obj[], suffix: string): Pod =>
  (
    objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith(suffix))?.spec as {
      template: { spec: Pod };
    }
  ).template.spec;

describe('chart NetworkPolicy and ServiceMonitor', () => {
  it('renders neither by default, and each only with its component', async () => {
    expect((await template(BOTH)).filter((o) => OPTIONAL_KINDS.has(o.kind))).toEqual([]);
    const ids = (objects: Obj[]) =>
      objects
        .filter((o) => OPTIONAL_KINDS.has(o.kind))
        .map((o) => `${o.kind}/${o.metadata.name}`)
        .sort();
    expect(ids(await template([...BOTH, ...ON]))).toEqual([
      'NetworkPolicy/r-scale-agent-agent-default',
      'NetworkPolicy/r-scale-agent-plugin-server',
      'ServiceMonitor/r-scale-agent-agent-default',
      'ServiceMonitor/r-scale-agent-plugin-server',
    ]);
    expect(ids(await template(['--set', 'agent.enabled=true', ...ON]))).toEqual([
      'NetworkPolicy/r-scale-agent-agent-default',
      'ServiceMonitor/r-scale-agent-agent-default',
    ]);
  });

  it('takes the peers from values: empty renders no from/to (any), set renders exactly them', async () => {
    const peers = [{ ipBlock: { cidr: '10.0.0.0/8' } }];
    const objects = await template([
      ...BOTH,
      ...ON,
      '--set-json',
      `pluginServer.networkPolicy.grpcFrom=${JSON.stringify(peers)}`,
      '--set-json',
      'pluginServer.networkPolicy.httpFrom=[]',
      '--set-json',
      `agent.networkPolicy.egressTo=${JSON.stringify(peers)}`,
      '--set-json',
      'agent.networkPolicy.egressPorts=[443]',
      '--set',
      'pluginServer.serviceMonitor.interval=30s,pluginServer.serviceMonitor.labels.release=kps',
    ]);
    const np = (name: string) =>
      objects.find((o) => o.kind === 'NetworkPolicy' && o.metadata.name === name)?.spec as Record<string, unknown>;
    expect(np('r-scale-agent-plugin-server').ingress).toEqual([
      { ports: [{ port: 'grpc', protocol: 'TCP' }], from: peers },
      { ports: [{ port: 'http', protocol: 'TCP' }] },
    ]);
    expect(np('r-scale-agent-agent-default').egress).toEqual([
      {
        ports: [
          { port: 53, protocol: 'UDP' },
          { port: 53, protocol: 'TCP' },
        ],
      },
      { ports: [{ port: 443, protocol: 'TCP' }], to: peers },
    ]);
    const sm = objects.find((o) => o.kind === 'ServiceMonitor' && o.metadata.name === 'r-scale-agent-plugin-server');
    expect(sm?.metadata.labels?.release).toBe('kps');
    expect(sm?.spec?.endpoints).toEqual([{ port: 'http', path: '/metrics', interval: '30s' }]);
  });

  it('agent.serviceMonitor: /metrics on the health port (config), a Service for it, and the NetworkPolicy admits the scrape', async () => {
    const objects = await template(['--set', 'agent.enabled=true', ...ON]);
    const config = objects.find(
      (o) => o.kind === 'ConfigMap' && o.metadata.name === 'r-scale-agent-agent-config-default',
    ) as (Obj & { data: Record<string, string> }) | undefined;
    expect((parseYaml(config!.data['config.yaml']!) as { health: unknown }).health).toEqual({
      host: '0.0.0.0',
      port: 8081,
      metrics: true,
    });
    const svc = objects.find((o) => o.kind === 'Service' && o.metadata.name === 'r-scale-agent-agent-default');
    expect(svc?.spec?.ports).toEqual([
      { name: 'health', port: 8081, targetPort: 'health', protocol: 'TCP', appProtocol: 'http' },
    ]);
    const sm = objects.find((o) => o.kind === 'ServiceMonitor');
    expect(sm?.spec?.endpoints).toEqual([{ port: 'health', path: '/metrics' }]);
    expect((sm?.spec?.selector as { matchLabels: unknown }).matchLabels).toEqual(svc?.spec?.selector);
    const np = objects.find((o) => o.kind === 'NetworkPolicy');
    expect(np?.spec?.ingress).toEqual([{ ports: [{ port: 'health', protocol: 'TCP' }], from: [{ podSelector: {} }] }]);
    // Without the ServiceMonitor nothing may connect in, and the health listener serves no metrics.
    const off = await template(['--set', 'agent.enabled=true,agent.networkPolicy.enabled=true']);
    expect(off.find((o) => o.kind === 'NetworkPolicy')?.spec?.ingress).toBeUndefined();
    expect(off.filter((o) => o.kind === 'Service')).toEqual([]);
    // The metrics Service alone (synth's values turn it on): the same Service, config and ingress, no ServiceMonitor.
    const service = await template([
      '--set',
      'agent.enabled=true,agent.networkPolicy.enabled=true,agent.metricsService.enabled=true',
    ]);
    expect(service.find((o) => o.kind === 'Service')).toEqual(svc);
    expect(service.find((o) => o.kind === 'NetworkPolicy')?.spec?.ingress).toEqual(np?.spec?.ingress);
    expect(service.filter((o) => o.kind === 'ServiceMonitor')).toEqual([]);
    const serviceConfig = service.find((o) => o.kind === 'ConfigMap') as unknown as { data: Record<string, string> };
    expect((parseYaml(serviceConfig.data['config.yaml']!) as { health: unknown }).health).toMatchObject({
      metrics: true,
    });
  });

  it('helm lint --strict accepts them; the schema refuses a misspelt key and a port out of range', async () => {
    const lint = await helm(['lint', '--strict', CHART, ...BOTH, ...ON], { allowFail: true });
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    for (const bad of ['pluginServer.networkPolicy.grpcFrm=[]', 'agent.networkPolicy.egressPorts=[70000]']) {
      const r = await helm(['template', 'r', CHART, ...BOTH, '--set-json', bad], { allowFail: true });
      expect(r.code, bad).not.toBe(0);
      expect(r.stderr, bad).toMatch(/networkPolicy/);
    }
  });
});

describe('chart extraEnv, extraVolumes, extraVolumeMounts', () => {
  it("each component gets its own, after the chart's", async () => {
    const extras = (c: string) => [
      '--set-json',
      `${c}.extraEnv=[{"name":"EXTRA_${c.toUpperCase()}","value":"1"}]`,
      '--set-json',
      `${c}.extraVolumes=[{"name":"ca-${c.toLowerCase()}","configMap":{"name":"ca"}}]`,
      '--set-json',
      `${c}.extraVolumeMounts=[{"name":"ca-${c.toLowerCase()}","mountPath":"/etc/ssl/extra"}]`,
    ];
    const objects = await template([...BOTH, ...extras('agent'), ...extras('pluginServer')]);
    for (const [suffix, c] of [
      ['agent-default', 'agent'],
      ['plugin-server', 'pluginServer'],
    ] as const) {
      const pod = podOf(objects, suffix);
      const container = pod.containers[0]!;
      expect(container.env.at(-1)?.name, suffix).toBe(`EXTRA_${c.toUpperCase()}`);
      expect(
        container.env.map((e) => e.name),
        suffix,
      ).toContain('POD_NAME');
      expect(container.volumeMounts.at(-1), suffix).toEqual({
        name: `ca-${c.toLowerCase()}`,
        mountPath: '/etc/ssl/extra',
      });
      expect(pod.volumes.at(-1)?.name, suffix).toBe(`ca-${c.toLowerCase()}`);
      expect(
        pod.volumes.map((v) => v.name),
        suffix,
      ).toContain('config');
    }
    const none = await template(BOTH);
    // Without extraEnv the agent has only the chart's own variables (its name, and jemalloc's).
    expect(podOf(none, 'agent-default').containers[0]!.env.map((e) => e.name)).toEqual([
      'POD_NAME',
      'LD_PRELOAD',
      'MALLOC_CONF',
    ]);
  });

  it('the schema refuses a mount without mountPath', async () => {
    const r = await helm(['template', 'r', CHART, ...BOTH, '--set-json', 'agent.extraVolumeMounts=[{"name":"x"}]'], {
      allowFail: true,
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/extraVolumeMounts/);
  });
});

describe('chart and kustomize components give one place the same objects', () => {
  let out: string;
  beforeAll(async () => {
    out = await synthForComponents('scale-agent-chart-np-');
  });
  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });

  /** kustomize build of the place's overlay with the components, and helm template of its values with the keys on. */
  async function both(place: string, components: string[], set: string): Promise<{ kz: Obj[]; chart: Obj[] }> {
    await appendFile(
      join(out, 'kustomize', 'overlays', place, 'workload', 'kustomization.yaml'),
      `components:\n${components.map((c) => `  - ../../../components/${c}\n`).join('')}`,
    );
    const kz = parse((await kustomize(['build', join(out, 'kustomize', 'overlays', place)])).stdout);
    const values = join(out, 'helm', `${place}.values.yaml`);
    const chart = parse(
      (await helm(['template', 'scale-agent', CHART, '--namespace', 'x', '-f', values, '--set', set])).stdout,
    );
    return { kz, chart };
  }

  /** What the API server acts on: kind, name and spec, and the labels both packagings set (Helm adds its own). */
  function essence(objects: Obj[], services: string[] = []): unknown[] {
    const common = ['app.kubernetes.io/name', 'app.kubernetes.io/component', 'app.kubernetes.io/instance'];
    return objects
      .filter((o) => OPTIONAL_KINDS.has(o.kind) || (o.kind === 'Service' && services.includes(o.metadata.name)))
      .map((o) => ({
        apiVersion: o.apiVersion,
        kind: o.kind,
        name: o.metadata.name,
        labels: Object.fromEntries(common.map((k) => [k, o.metadata.labels?.[k]])),
        spec: o.spec,
      }))
      .sort((a, b) => `${a.kind}/${a.name}`.localeCompare(`${b.kind}/${b.name}`));
  }

  it('plugin-server: NetworkPolicy and ServiceMonitor', async () => {
    const { kz, chart } = await both(
      'plugin-server',
      ['network-policy-plugin-server', 'service-monitor-plugin-server'],
      'pluginServer.networkPolicy.enabled=true,pluginServer.serviceMonitor.enabled=true',
    );
    const expected = essence(kz);
    expect(expected.map((o) => (o as { kind: string }).kind)).toEqual(['NetworkPolicy', 'ServiceMonitor']);
    // The overlay's instance label reaches every selector, the ServiceMonitor's too (the component's configuration).
    expect(JSON.stringify(expected)).not.toContain('undefined');
    expect(essence(chart)).toEqual(expected);
  });

  it('agent: NetworkPolicy, and the Service and ServiceMonitor of its metrics, which the NetworkPolicy admits', async () => {
    const { kz, chart } = await both(
      'agent-remote',
      ['network-policy-agent', 'service-monitor-agent'],
      'agent.networkPolicy.enabled=true,agent.serviceMonitor.enabled=true',
    );
    const expected = essence(kz, ['scale-agent-agent-remote']);
    expect(expected.map((o) => (o as { kind: string }).kind)).toEqual(['NetworkPolicy', 'Service', 'ServiceMonitor']);
    expect(JSON.stringify(expected)).not.toContain('undefined');
    expect(JSON.stringify(expected)).toContain('"ingress"');
    expect(essence(chart, ['scale-agent-agent-remote'])).toEqual(expected);
    // What the scrape needs is on in both: synth's agent config serves /metrics on the health port.
    const config = (objs: Obj[]) =>
      (
        objs.find(
          (o) => o.kind === 'ConfigMap' && o.metadata.name.startsWith('scale-agent-agent-config'),
        ) as unknown as {
          data: Record<string, string>;
        }
      ).data['config.yaml'];
    for (const text of [config(kz), config(chart)]) {
      expect((parseYaml(text!) as { health: unknown }).health).toEqual({ host: '0.0.0.0', port: 8081, metrics: true });
    }
  });
});

describe('chart with every optional key installs into a restricted namespace', () => {
  it('helm install on a real API server with a ServiceMonitor CRD stand-in; every pod admitted', async () => {
    const work = await mkdtemp(join(tmpdir(), 'scale-agent-chart-np-install-'));
    const plane = await ControlPlane.start({ dir: join(work, 'cp') });
    const kubectl = (args: string[], allowFail = false) =>
      run(join(plane.binDir, 'kubectl'), ['--kubeconfig', plane.kubeconfig, ...args], { allowFail });
    try {
      await kubectl(['apply', '-f', STAND_IN_CRD]);
      await kubectl(['wait', '--for=condition=Established', 'crd/servicemonitors.monitoring.coreos.com']);
      await kubectl(['create', 'namespace', 'sa']);
      await kubectl(['label', 'namespace', 'sa', ...RESTRICTED]);
      const values = join(work, 'values.yaml');
      await writeFile(
        values,
        JSON.stringify({
          pluginServer: {
            enabled: true,
            replicas: 2,
            networkPolicy: { enabled: true, grpcFrom: [{ ipBlock: { cidr: '10.0.0.0/8' } }] },
            serviceMonitor: { enabled: true, interval: '30s', labels: { release: 'kps' } },
            extraEnv: [{ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/ssl/extra/ca.crt' }],
            extraVolumes: [{ name: 'extra-ca', emptyDir: {} }],
            extraVolumeMounts: [{ name: 'extra-ca', mountPath: '/etc/ssl/extra', readOnly: true }],
          },
          agent: {
            enabled: true,
            networkPolicy: { enabled: true, egressTo: [{ ipBlock: { cidr: '10.0.0.0/8' } }] },
            serviceMonitor: { enabled: true },
            extraEnv: [{ name: 'NODE_EXTRA_CA_CERTS', value: '/etc/ssl/extra/ca.crt' }],
            extraVolumes: [{ name: 'extra-ca', emptyDir: {} }],
            extraVolumeMounts: [{ name: 'extra-ca', mountPath: '/etc/ssl/extra', readOnly: true }],
          },
        }),
      );
      const env = { KUBECONFIG: plane.kubeconfig, HOME: work };
      const r = await helm(['install', 'r', CHART, '--namespace', 'sa', '-f', values], { allowFail: true, env });
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).not.toMatch(/PodSecurity|unknown field/);
      const names = async (kind: string) =>
        (await kubectl(['get', kind, '-n', 'sa', '-o', 'name'])).stdout.trim().split('\n').sort();
      expect(await names('networkpolicies')).toEqual([
        'networkpolicy.networking.k8s.io/r-scale-agent-agent-default',
        'networkpolicy.networking.k8s.io/r-scale-agent-plugin-server',
      ]);
      expect(await names('servicemonitors')).toEqual([
        'servicemonitor.monitoring.coreos.com/r-scale-agent-agent-default',
        'servicemonitor.monitoring.coreos.com/r-scale-agent-plugin-server',
      ]);
      await expectAllPodsAdmitted(kubectl);
      // The stand-in's strict field validation is live: a misspelt endpoint field is refused, not pruned.
      const sm = JSON.parse((await kubectl(['get', 'servicemonitor', '-n', 'sa', '-o', 'json'])).stdout) as {
        items: { metadata: Record<string, unknown>; spec: { endpoints: Record<string, unknown>[] } }[];
      };
      const typo = structuredClone(sm.items[0]!);
      typo.metadata = { name: 'typo' };
      typo.spec.endpoints = [{ port: 'http', pth: '/metrics' }];
      const bad = await run(
        join(plane.binDir, 'kubectl'),
        ['--kubeconfig', plane.kubeconfig, 'apply', '--dry-run=server', '-n', 'sa', '-f', '-'],
        {
          allowFail: true,
          input: JSON.stringify({ apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor', ...typo }),
        },
      );
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toMatch(/unknown field "spec\.endpoints\[0\]\.pth"/);
    } finally {
      await plane.stop();
      await rm(work, { recursive: true, force: true });
    }
  }, 240_000);
});
