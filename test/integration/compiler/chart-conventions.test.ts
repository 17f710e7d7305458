/**
 * The chart conventions platform teams expect (cert-manager's, argo-helm's): names from the release via
 * `nameOverride`/`fullnameOverride`, so releases share a namespace without sharing an object or a selector.
 * Rendered by the real helm.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { synthFile } from '../../../src/compiler/index.js';
import { createNamespace, helm, kubectl } from '../../infra/index.js';

const CHART = new URL('../../../charts/scale-agent', import.meta.url).pathname;

interface Obj {
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

/** Every workload and optional object on: both components, PDBs, TLS from values, the dashboard and rules. */
const ARGS = [
  '--set',
  [
    'pluginServer.enabled=true',
    'pluginServer.replicas=2',
    'pluginServer.podDisruptionBudget.enabled=true',
    'pluginServer.tls.source=secret',
    'pluginServer.tls.secret.caCert=ca',
    'agent.enabled=true',
    'agent.podDisruptionBudget.enabled=true',
    'agent.tls.source=secret',
    'agent.tls.secret.caCert=ca',
    'monitoring.dashboard.enabled=true',
    'monitoring.prometheusRule.enabled=true',
  ].join(','),
];

async function render(release: string, args: string[] = []): Promise<Obj[]> {
  const { stdout } = await helm(['template', release, CHART, '--namespace', 'shared', ...ARGS, ...args]);
  return parseAllDocuments(stdout)
    .map((d) => d.toJS() as Obj | null)
    .filter((o): o is Obj => o !== null);
}

const id = (o: Obj): string => `${o.kind}/${o.metadata.name}`;

/** What a pod spec names that must exist in the same release: its ServiceAccount, ConfigMaps and Secrets. */
function references(objects: Obj[]): string[] {
  const out: string[] = [];
  for (const o of objects.filter((x) => x.kind === 'Deployment')) {
    const pod = (o.spec as { template: { spec: Record<string, unknown> } }).template.spec as {
      serviceAccountName: string;
      volumes: { configMap?: { name: string }; secret?: { secretName: string } }[];
    };
    out.push(`ServiceAccount/${pod.serviceAccountName}`);
    for (const v of pod.volumes) {
      if (v.configMap) out.push(`ConfigMap/${v.configMap.name}`);
      if (v.secret) out.push(`Secret/${v.secret.secretName}`);
    }
  }
  return out;
}

function selectors(objects: Obj[]): Record<string, string>[] {
  return objects.flatMap((o) => {
    const s = o.spec as { selector?: Record<string, unknown> } | undefined;
    if (!s?.selector) return [];
    return [(s.selector.matchLabels as Record<string, string> | undefined) ?? (s.selector as Record<string, string>)];
  });
}

describe('chart names', () => {
  it('two releases in one namespace share no object name and no selector', async () => {
    const blue = await render('blue');
    const green = await render('green');
    expect(blue.length).toBeGreaterThan(10);
    const all = [...blue, ...green].map(id);
    expect(all.filter((x, i) => all.indexOf(x) !== i)).toEqual([]);
    for (const [release, objects] of [
      ['blue', blue],
      ['green', green],
    ] as const) {
      for (const o of objects) expect(o.metadata.name, id(o)).toMatch(new RegExp(`^${release}-scale-agent(-|$)`));
      // Every reference resolves inside the release, never to the other one's objects.
      const ids = new Set(objects.map(id));
      const refs = references(objects);
      expect(refs.length).toBeGreaterThanOrEqual(6);
      for (const r of refs) expect(ids.has(r), `${release}: ${r}`).toBe(true);
    }
    // A Service or PDB of one release selecting the other's pods would mix them: selectors differ by instance.
    const blueSel = selectors(blue).map((s) => JSON.stringify(s));
    for (const s of selectors(green)) expect(blueSel).not.toContain(JSON.stringify(s));
    for (const s of selectors(blue)) expect(s['app.kubernetes.io/instance']).toBe('blue');
  });

  it('two releases install side by side into one namespace on a real API server', async () => {
    const ns = await createNamespace('chart-two-releases');
    // Everything but the PrometheusRule, whose CRD this control plane does not have.
    const args = [...ARGS, '--set', 'monitoring.prometheusRule.enabled=false'];
    try {
      for (const release of ['blue', 'green']) {
        const r = await helm(['install', release, CHART, '--namespace', ns, ...args], { allowFail: true });
        expect(r.code, `${release}: ${r.stderr}`).toBe(0);
      }
      const deployments = await kubectl(['get', 'deployments', '-n', ns, '-o', 'name']);
      expect(deployments.stdout.trim().split('\n').sort()).toEqual([
        'deployment.apps/blue-scale-agent-agent-default',
        'deployment.apps/blue-scale-agent-plugin-server',
        'deployment.apps/green-scale-agent-agent-default',
        'deployment.apps/green-scale-agent-plugin-server',
      ]);
    } finally {
      for (const release of ['blue', 'green'])
        await helm(['uninstall', release, '--namespace', ns], { allowFail: true });
      await kubectl(['delete', 'namespace', ns, '--wait=false']);
    }
  });

  it('the release scale-agent keeps the names of kustomize/base', async () => {
    const names = (await render('scale-agent')).map(id);
    expect(names).toEqual(
      expect.arrayContaining([
        'Deployment/scale-agent-plugin-server',
        'Service/scale-agent-plugin-server',
        'Service/scale-agent-plugin-server-grpc',
        'ConfigMap/scale-agent-plugin-server-config',
        'Secret/scale-agent-plugin-server-tls',
        'Deployment/scale-agent-agent-default',
        'ConfigMap/scale-agent-agent-config-default',
        'Secret/scale-agent-agent-tls-default',
        'ConfigMap/scale-agent-dashboard',
        'PrometheusRule/scale-agent',
      ]),
    );
  });

  it('fullnameOverride names every object, nameOverride the name label', async () => {
    const objects = await render('whatever', ['--set', 'fullnameOverride=acme,nameOverride=sa']);
    for (const o of objects) {
      expect(o.metadata.name, id(o)).toMatch(/^acme(-|$)/);
      expect(o.metadata.labels?.['app.kubernetes.io/name'], id(o)).toBe('sa');
    }
    for (const s of selectors(objects)) expect(s['app.kubernetes.io/name']).toBe('sa');
    for (const r of references(objects)) expect(objects.map(id)).toContain(r);
  });

  it('an explicit instance wins over the release name (scale-agent synth writes the topology and group)', async () => {
    const objects = await render('r', ['--set', 'pluginServer.instance=topo,agent.instance=edge']);
    const dep = (c: string) => objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith(c));
    expect(dep('plugin-server')?.metadata.labels?.['app.kubernetes.io/instance']).toBe('topo');
    expect(dep('agent-default')?.metadata.labels?.['app.kubernetes.io/instance']).toBe('edge');
  });

  it('helm lint --strict accepts the overrides, the schema refuses a name that is no DNS label', async () => {
    const lint = await helm(['lint', '--strict', CHART, ...ARGS, '--set', 'fullnameOverride=acme,nameOverride=sa'], {
      allowFail: true,
    });
    expect(lint.code, lint.stdout + lint.stderr).toBe(0);
    const bad = await helm(['template', 'r', CHART, '--set', 'fullnameOverride=Not_A_Name'], { allowFail: true });
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/fullnameOverride/);
  });

  it('the longest release name (53) keeps names within 63 characters and distinct', async () => {
    const objects = await render(`r${'x'.repeat(52)}`, ['--set-string', `agent.group=${'g'.repeat(40)}`]);
    const ids = objects.map(id);
    expect(ids.filter((x, i) => ids.indexOf(x) !== i)).toEqual([]);
    for (const o of objects) {
      expect(o.metadata.name.length, id(o)).toBeLessThanOrEqual(63);
      expect(o.metadata.name, id(o)).toMatch(/^rx+[a-z-]*[a-z]$/);
    }
    expect(ids).toContain(`ConfigMap/rxxxxxxxx-agent-config-${'g'.repeat(40)}`);
    for (const r of references(objects)) expect(ids).toContain(r);
  });
});

type Spread = {
  topologyKey: string;
  whenUnsatisfiable: string;
  labelSelector: { matchLabels: Record<string, string> };
};

function pluginServer(objects: Obj[]): { selector: Record<string, string>; spread?: Spread[] } {
  const d = objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith('plugin-server'));
  const spec = d?.spec as {
    selector: { matchLabels: Record<string, string> };
    template: { spec: Record<string, unknown> };
  };
  return {
    selector: spec.selector.matchLabels,
    spread: spec.template.spec.topologySpreadConstraints as Spread[] | undefined,
  };
}

describe('plugin-server replicas', () => {
  const only = ['--set', 'pluginServer.enabled=true'];
  const renderPs = async (args: string[]) => {
    const { stdout } = await helm(['template', 'r', CHART, '--namespace', 'shared', ...only, ...args]);
    return parseAllDocuments(stdout)
      .map((d) => d.toJS() as Obj | null)
      .filter((o): o is Obj => o !== null);
  };

  it('more than one spreads softly over nodes and zones, by its own selector, with a PDB', async () => {
    const objects = await renderPs(['--set', 'pluginServer.replicas=3']);
    const ps = pluginServer(objects);
    expect(ps.spread?.map((c) => c.topologyKey)).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
    for (const c of ps.spread ?? []) {
      expect(c.whenUnsatisfiable).toBe('ScheduleAnyway');
      expect(c.labelSelector.matchLabels).toEqual(ps.selector);
    }
    expect(objects.filter((o) => o.kind === 'PodDisruptionBudget').map((o) => o.metadata.name)).toEqual([
      'r-scale-agent-plugin-server',
    ]);
  });

  it('one replica has neither; explicit settings win', async () => {
    const one = await renderPs([]);
    expect(pluginServer(one).spread).toBeUndefined();
    expect(one.filter((o) => o.kind === 'PodDisruptionBudget')).toEqual([]);
    const off = await renderPs([
      '--set',
      'pluginServer.replicas=3,pluginServer.podDisruptionBudget.enabled=false',
      '--set-json',
      'pluginServer.topologySpreadConstraints=[]',
    ]);
    expect(pluginServer(off).spread).toBeUndefined();
    expect(off.filter((o) => o.kind === 'PodDisruptionBudget')).toEqual([]);
    const own = [{ maxSkew: 2, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: {} }];
    const mine = await renderPs([
      '--set',
      'pluginServer.replicas=3',
      '--set-json',
      `pluginServer.topologySpreadConstraints=${JSON.stringify(own)}`,
    ]);
    expect(pluginServer(mine).spread).toEqual(own);
  });

  it("the chart's default is the compiler's: synthesized values without their spread render the same pods", async () => {
    const work = await mkdtemp(join(tmpdir(), 'scale-agent-chart-spread-'));
    try {
      const out = join(work, 'out');
      const example = new URL('../../../examples/infrastructure.yaml', import.meta.url).pathname;
      await synthFile(example, { out });
      const values = parse(await readFile(join(out, 'helm', 'plugin-server.values.yaml'), 'utf8')) as {
        pluginServer: { replicas: number; topologySpreadConstraints?: unknown; podDisruptionBudget?: unknown };
      };
      expect(values.pluginServer.replicas).toBeGreaterThan(1);
      const fromModel = values.pluginServer.topologySpreadConstraints;
      expect(fromModel).toBeDefined();
      delete values.pluginServer.topologySpreadConstraints;
      delete values.pluginServer.podDisruptionBudget;
      await writeFile(join(work, 'v.yaml'), stringify(values));
      const { stdout } = await helm(['template', 'r', CHART, '-f', join(work, 'v.yaml')]);
      const objects = parseAllDocuments(stdout)
        .map((d) => d.toJS() as Obj | null)
        .filter((o): o is Obj => o !== null);
      expect(pluginServer(objects).spread).toEqual(fromModel);
      expect(objects.filter((o) => o.kind === 'PodDisruptionBudget')).toHaveLength(1);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

describe('agent group replicas', () => {
  it("spread like the plugin-server's, by the group's selector; the chart's default is the compiler's", async () => {
    const work = await mkdtemp(join(tmpdir(), 'scale-agent-chart-agent-spread-'));
    try {
      const topology = join(work, 'topology.yaml');
      await writeFile(
        topology,
        [
          'apiVersion: scale-agent.io/v1alpha1',
          'kind: Topology',
          'metadata: { name: spread }',
          'pluginServer: { namespace: spinnaker }',
          'agents:',
          '  - name: fleet',
          '    mode: service',
          '    replicas: 3',
          '    accounts: [{ name: a, kubeconfigSecret: { name: kc, key: a } }]',
          '',
        ].join('\n'),
      );
      const out = join(work, 'out');
      await synthFile(topology, { out });
      const values = parse(await readFile(join(out, 'helm', 'agent-fleet.values.yaml'), 'utf8')) as {
        agent: { topologySpreadConstraints?: Spread[]; podDisruptionBudget?: unknown };
      };
      const fromModel = values.agent.topologySpreadConstraints;
      expect(fromModel?.map((c) => c.topologyKey)).toEqual(['kubernetes.io/hostname', 'topology.kubernetes.io/zone']);
      for (const c of fromModel ?? []) {
        expect(c.labelSelector.matchLabels).toEqual({
          'app.kubernetes.io/name': 'scale-agent',
          'app.kubernetes.io/component': 'agent',
          'app.kubernetes.io/instance': 'fleet',
        });
      }
      delete values.agent.topologySpreadConstraints;
      await writeFile(join(work, 'v.yaml'), stringify(values));
      const { stdout } = await helm(['template', 'r', CHART, '-f', join(work, 'v.yaml')]);
      const agent = parseAllDocuments(stdout)
        .map((d) => d.toJS() as Obj | null)
        .find((o) => o?.kind === 'Deployment');
      const pod = (agent?.spec as { template: { spec: { topologySpreadConstraints?: Spread[] } } }).template.spec;
      expect(pod.topologySpreadConstraints).toEqual(fromModel);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
});

describe('ServiceAccount, REST Service annotations and an existing TLS Secret', () => {
  const renderBoth = async (set: string) => {
    const { stdout } = await helm([
      'template',
      'r',
      CHART,
      '--set',
      `pluginServer.enabled=true,agent.enabled=true,${set}`,
    ]);
    return parseAllDocuments(stdout)
      .map((d) => d.toJS() as Obj | null)
      .filter((o): o is Obj => o !== null);
  };
  const podSpec = (objects: Obj[], suffix: string) =>
    (
      objects.find((o) => o.kind === 'Deployment' && o.metadata.name.endsWith(suffix))?.spec as {
        template: {
          spec: { serviceAccountName: string; volumes: { name: string; secret?: { secretName: string } }[] };
        };
      }
    ).template.spec;

  it('serviceAccount.create false uses the named one (else default) and creates none; a name renames it', async () => {
    const objects = await renderBoth(
      'agent.serviceAccount.create=false,agent.serviceAccount.name=shared-sa,pluginServer.serviceAccount.name=ps-sa',
    );
    expect(objects.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name)).toEqual(['ps-sa']);
    expect(podSpec(objects, 'agent-default').serviceAccountName).toBe('shared-sa');
    expect(podSpec(objects, 'plugin-server').serviceAccountName).toBe('ps-sa');
    const unnamed = await renderBoth('agent.serviceAccount.create=false');
    expect(podSpec(unnamed, 'agent-default').serviceAccountName).toBe('default');
    const defaults = await renderBoth('');
    expect(defaults.filter((o) => o.kind === 'ServiceAccount').map((o) => o.metadata.name)).toEqual([
      'r-scale-agent-agent-default',
      'r-scale-agent-plugin-server',
    ]);
    expect(podSpec(defaults, 'agent-default').serviceAccountName).toBe('r-scale-agent-agent-default');
  });

  it('tls.existingSecret is mounted and the chart renders no Secret of its own', async () => {
    const objects = await renderBoth(
      'pluginServer.tls.source=secret,pluginServer.tls.existingSecret=ps-tls,agent.tls.source=secret,agent.tls.existingSecret=agent-tls',
    );
    expect(objects.filter((o) => o.kind === 'Secret')).toEqual([]);
    expect(podSpec(objects, 'plugin-server').volumes.find((v) => v.name === 'tls')?.secret?.secretName).toBe('ps-tls');
    expect(podSpec(objects, 'agent-default').volumes.find((v) => v.name === 'tls')?.secret?.secretName).toBe(
      'agent-tls',
    );
  });

  it('pluginServer.service.annotations go on the REST Service only', async () => {
    const objects = await renderBoth('pluginServer.service.annotations.team=spinnaker');
    const svc = (name: string) =>
      objects.find((o) => o.kind === 'Service' && o.metadata.name === name)?.metadata as {
        annotations?: Record<string, string>;
      };
    expect(svc('r-scale-agent-plugin-server').annotations).toEqual({ team: 'spinnaker' });
    expect(svc('r-scale-agent-plugin-server-grpc').annotations).toBeUndefined();
  });
});
