/**
 * Every example topology through the real tools: `kustomize build` of every overlay gives exactly the objects of
 * the matching manifests file; `helm lint --strict` and `helm template` accept every values file; the API server
 * accepts every manifest (`kubectl apply --dry-run=server`).
 */
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { synthFile } from '../../../src/compiler/index.js';
import { helm, kubeScore, kubectl, kustomize } from '../../infra/index.js';
import { topology } from '../../unit/compiler/_helpers.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';

const ROOT = new URL('../../../', import.meta.url).pathname;
const CHART = join(ROOT, 'charts', 'scale-agent');
const EXAMPLES = ['service', 'infrastructure', 'agent', 'mixed'];

type Obj = { kind: string; metadata: { name: string; namespace?: string } };

function byId(text: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const d of parseAllDocuments(text)) {
    const o = d.toJS() as Obj | null;
    if (o) out.set(`${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`, o);
  }
  return out;
}

/** kube-score findings kept on purpose; kustomize/README.md ("Policy checks") says why for each. */
const DELIBERATE_CRITICAL = [/\) CPU limit is not set$/, /\) ImagePullPolicy is not set to Always$/];

const HELM_LABELS = ['helm.sh/chart', 'app.kubernetes.io/managed-by', 'app.kubernetes.io/version'];

/**
 * Objects by id with what only Helm adds taken out (its labels, checksum annotations, the release namespace it
 * leaves implicit), and config files compared as data rather than as text (Go and JS YAML emitters differ).
 */
function comparable(text: string, namespace: string): Map<string, unknown> {
  const out = new Map<string, unknown>();
  const clean = (meta: Record<string, unknown> | undefined) => {
    if (!meta) return;
    const labels = meta.labels as Record<string, string> | undefined;
    for (const l of HELM_LABELS) delete labels?.[l];
    const ann = meta.annotations as Record<string, string> | undefined;
    for (const a of Object.keys(ann ?? {})) if (a.startsWith('checksum/')) delete ann?.[a];
    if (ann && Object.keys(ann).length === 0) delete meta.annotations;
  };
  for (const d of parseAllDocuments(text)) {
    const o = d.toJS() as (Obj & { data?: Record<string, string>; spec?: Record<string, unknown> }) | null;
    if (!o) continue;
    const meta = o.metadata as unknown as Record<string, unknown>;
    clean(meta);
    clean((o.spec?.template as { metadata?: Record<string, unknown> } | undefined)?.metadata);
    if (CLUSTER_SCOPED.has(o.kind)) delete meta.namespace;
    else meta.namespace ??= namespace;
    if (o.kind === 'ConfigMap' && o.data) {
      o.data = Object.fromEntries(Object.entries(o.data).map(([k, v]) => [k, parse(v) as string]));
    }
    out.set(`${o.kind}/${String(meta.namespace ?? '')}/${o.metadata.name}`, o);
  }
  return out;
}

const CLUSTER_SCOPED = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'scale-agent-synth-examples-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

/** The three projections of one model agree: kustomize build of each overlay is its manifests file. */
async function expectKustomizeEqualsManifests(out: string, places: string[]): Promise<void> {
  for (const place of places) {
    const built = await kustomize(['build', join(out, 'kustomize', 'overlays', place)]);
    const manifests = await readFile(join(out, 'manifests', `${place}.yaml`), 'utf8');
    const a = byId(built.stdout);
    const b = byId(manifests);
    expect([...a.keys()].sort(), place).toEqual([...b.keys()].sort());
    for (const [id, obj] of a) expect(obj, `${place} ${id}`).toEqual(b.get(id));
  }
}

/** ... and helm template of each values file, as the summary's release and namespace, is the same objects. */
async function expectHelmEqualsManifests(out: string): Promise<void> {
  const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as {
    places: { name: string; namespace: string; apply: string[] }[];
  };
  for (const p of summary.places) {
    const release = /helm upgrade --install (\S+)/.exec(p.apply.join('\n'))?.[1] as string;
    const values = join(out, 'helm', `${p.name}.values.yaml`);
    // --skip-tests: the `helm test` pod is Helm's alone (kustomize has no test hooks); chart-test-hook.test.ts checks it.
    const tpl = await helm(['template', release, CHART, '--namespace', p.namespace, '-f', values, '--skip-tests']);
    const fromHelm = comparable(tpl.stdout, p.namespace);
    // `helm install --create-namespace` makes the namespace that manifests list as an object.
    const fromManifests = comparable(await readFile(join(out, 'manifests', `${p.name}.yaml`), 'utf8'), p.namespace);
    for (const id of [...fromManifests.keys()]) if (id.startsWith('Namespace/')) fromManifests.delete(id);
    expect([...fromHelm.keys()].sort(), p.name).toEqual([...fromManifests.keys()].sort());
    for (const [id, obj] of fromHelm) expect(obj, `${p.name} ${id}`).toEqual(fromManifests.get(id));
  }
}

// The examples use generated TLS and MySQL; this covers the cert-manager path, HA replicas (PDBs) on PostgreSQL,
// source ranges and the topology's pod settings (scheduling, pod metadata, ServiceAccount annotations for workload
// identity).
const CERT_MANAGER_TOPOLOGY = topology(
  'cm',
  `
pluginServer:
  namespace: spinnaker
  replicas: 2
  storage: { type: postgres, secretRef: { name: pg, key: dsn } }
  tls: { mode: mtls, certificates: { source: cert-manager, issuerRef: { name: ca } } }
  grpc:
    exposure: { type: LoadBalancer, provider: aws, address: grpc.example.com, loadBalancerSourceRanges: [10.0.0.0/8] }
  pod:
    nodeSelector: { kubernetes.io/os: linux }
    tolerations: [{ key: dedicated, operator: Equal, value: spinnaker, effect: NoSchedule }]
    topologySpreadConstraints:
      - maxSkew: 1
        topologyKey: topology.kubernetes.io/zone
        whenUnsatisfiable: ScheduleAnyway
        labelSelector: { matchLabels: { app.kubernetes.io/component: plugin-server } }
    priorityClassName: system-cluster-critical
    annotations: { example.com/team: platform }
    labels: { example.com/tier: control }
agents:
  - name: fleet
    mode: infrastructure
    replicas: 3
    pod:
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 100
              podAffinityTerm:
                topologyKey: kubernetes.io/hostname
                labelSelector: { matchLabels: { app.kubernetes.io/component: agent } }
      serviceAccountAnnotations: { eks.amazonaws.com/role-arn: 'arn:aws:iam::123456789012:role/scale-agent' }
    accounts:
      - { name: a, namespaces: [apps], kubeconfigSecret: { name: kc, key: a } }
`,
);

describe('cert-manager TLS with HA replicas', () => {
  let out: string;
  let places: string[];
  beforeAll(async () => {
    out = join(work, 'cert-manager');
    const file = join(work, 'cert-manager.yaml');
    await writeFile(file, CERT_MANAGER_TOPOLOGY);
    places = (await synthFile(file, { out })).summary.places.map((p) => p.name);
  });

  it('kustomize build, manifests and helm template agree', async () => {
    await expectKustomizeEqualsManifests(out, places);
    await expectHelmEqualsManifests(out);
    const kinds = places.flatMap((p) => [...byId(readFileSync(join(out, 'manifests', `${p}.yaml`), 'utf8')).keys()]);
    expect(kinds.filter((k) => k.startsWith('Certificate/')).length).toBe(2);
    expect(kinds.filter((k) => k.startsWith('PodDisruptionBudget/')).length).toBe(2);
    const ps = [...byId(readFileSync(join(out, 'manifests', 'plugin-server.yaml'), 'utf8')).values()].find(
      (o) => (o as Obj).kind === 'Deployment',
    ) as { spec: { template: { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> } } };
    expect(ps.spec.template.spec.priorityClassName).toBe('system-cluster-critical');
    // The store's URL reaches the plugin-server from the user's Secret, under the name its config reads.
    const container = (ps.spec.template.spec.containers as { env: { name: string; valueFrom?: unknown }[] }[])[0];
    expect(container?.env.find((e) => e.name === 'SCALE_AGENT_POSTGRES_URL')?.valueFrom).toEqual({
      secretKeyRef: { name: 'pg', key: 'dsn' },
    });
    expect(container?.env.some((e) => e.name === 'SCALE_AGENT_MYSQL_URL')).toBe(false);
    const configMap = [...byId(readFileSync(join(out, 'manifests', 'plugin-server.yaml'), 'utf8')).values()].find(
      (o) =>
        (o as Obj).kind === 'ConfigMap' &&
        typeof (o as { data?: Record<string, string> }).data?.['config.yaml'] === 'string',
    ) as { data: Record<string, string> };
    expect((parse(configMap.data['config.yaml'] as string) as { storage: unknown }).storage).toEqual({
      type: 'postgres',
      env: 'SCALE_AGENT_POSTGRES_URL',
    });
    expect(ps.spec.template.spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(ps.spec.template.metadata.labels['example.com/tier']).toBe('control');
    const sa = byId(readFileSync(join(out, 'manifests', 'agent-fleet.yaml'), 'utf8')).get(
      'ServiceAccount/scale-agent/scale-agent-agent-fleet',
    ) as { metadata: { annotations?: Record<string, string> } };
    expect(sa.metadata.annotations?.['eks.amazonaws.com/role-arn']).toBe('arn:aws:iam::123456789012:role/scale-agent');
  });
});

describe.each(EXAMPLES)('example %s', (example) => {
  let out: string;
  let places: string[];
  beforeAll(async () => {
    out = join(work, example);
    const r = await synthFile(join(ROOT, 'examples', `${example}.yaml`), { out });
    places = r.summary.places.map((p) => p.name);
    expect(places.length).toBeGreaterThan(1);
  });

  it('kustomize build of every overlay equals its manifests', async () => {
    await expectKustomizeEqualsManifests(out, places);
  });

  it('helm template of every values file gives the objects of its manifests (modulo what Helm adds)', async () => {
    await expectHelmEqualsManifests(out);
  });

  it('kube-score finds no CRITICAL in the manifests beyond the deliberate ones', async () => {
    const files = places.map((p) => join(out, 'manifests', `${p}.yaml`));
    const r = await kubeScore(['score', '--output-format', 'ci', ...files], { allowFail: true });
    const critical = r.stdout.split('\n').filter((l) => l.startsWith('[CRITICAL]'));
    expect(r.stdout, 'kube-score scored the Deployments').toMatch(/apps\/v1\/Deployment/);
    expect(critical.filter((l) => !DELIBERATE_CRITICAL.some((re) => re.test(l)))).toEqual([]);
  });

  it('helm lint --strict and helm template accept every values file', async () => {
    const files = (await readdir(join(out, 'helm'))).sort();
    expect(files.length).toBe(places.length);
    for (const f of files) {
      const values = join(out, 'helm', f);
      const lint = await helm(['lint', '--strict', CHART, '-f', values], { allowFail: true });
      expect(lint.code, `${f}: ${lint.stdout}${lint.stderr}`).toBe(0);
      const tpl = await helm(['template', 'release', CHART, '--namespace', 'scale-agent', '-f', values]);
      expect(byId(tpl.stdout).size, f).toBeGreaterThan(0);
    }
  });

  it('the API server accepts every manifest (server-side dry run)', async () => {
    // The namespaces the examples name must exist for a dry run of namespaced objects.
    const namespaces = new Set<string>();
    for (const place of places) {
      for (const [, o] of byId(await readFile(join(out, 'manifests', `${place}.yaml`), 'utf8'))) {
        const ns = (o as Obj).metadata.namespace;
        if (ns) namespaces.add(ns);
      }
    }
    await kubectl(['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [...namespaces].map((name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } })),
      }),
    });
    for (const place of places) {
      const r = await kubectl(['apply', '--dry-run=server', '-f', join(out, 'manifests', `${place}.yaml`)], {
        allowFail: true,
      });
      expect(r.code, `${place}: ${r.stderr}`).toBe(0);
    }
  });
});

describe('chart', () => {
  it.each(['service', 'infrastructure', 'agent'])('lints with ci/%s-values.yaml', async (mode) => {
    const r = await helm(['lint', '--strict', CHART, '-f', join(CHART, 'ci', `${mode}-values.yaml`)], {
      allowFail: true,
    });
    expect(r.code, r.stdout + r.stderr).toBe(0);
  });

  it('refuses a values file with an unknown key', async () => {
    const r = await helm(['template', 'x', CHART, '--set', 'pluginServer.enabeld=true'], { allowFail: true });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/enabeld|additional/i);
  });
});
