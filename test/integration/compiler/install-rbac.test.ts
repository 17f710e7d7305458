/**
 * A topology applied for real on the shared control plane, then `kubectl auth can-i` as each generated
 * ServiceAccount proves it can do exactly what its account should: watch in its namespaces and not in others,
 * read-only cannot write, Secrets are list/watch without get for read-only accounts, nothing cluster-scoped
 * beyond what a cluster-wide account needs; an agent reading a kubeconfig Secret live (kubeconfigSecret.watch) may
 * get and watch that Secret by name and no other.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { synthFile, type SynthFileResult } from '../../../src/compiler/index.js';
import { createNamespace, helm, kubectl } from '../../infra/index.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const suffix = Math.random().toString(36).slice(2, 7);
const ro = `ro-${suffix}`;
const rw = `rw-${suffix}`;
const edge = `edge-${suffix}`;
const live = `live-${suffix}`;

let work: string;
let result: SynthFileResult;
let ns: { cp: string; a: string; b: string; other: string; sa: string; agent: string };

async function can(as: string, verb: string, resource: string, namespace?: string): Promise<boolean> {
  const args = [
    'auth',
    'can-i',
    verb,
    resource,
    `--as=${as}`,
    ...(namespace ? ['-n', namespace] : ['--all-namespaces']),
  ];
  const r = await kubectl(args, { allowFail: true });
  return r.stdout.trim() === 'yes';
}

beforeAll(async () => {
  ns = {
    cp: await createNamespace('synth-cp'),
    a: await createNamespace('synth-a'),
    b: await createNamespace('synth-b'),
    other: await createNamespace('synth-other'),
    sa: `synth-sa-${suffix}`,
    agent: `synth-agent-${suffix}`,
  };
  work = await mkdtemp(join(tmpdir(), 'scale-agent-install-'));
  const topology = `
apiVersion: scale-agent.io/v1alpha1
kind: Topology
metadata: { name: it-${suffix} }
pluginServer:
  namespace: ${ns.cp}
  grpc: { exposure: { type: LoadBalancer, provider: aws, internal: true, address: grpc.it.example } }
agents:
  - name: core-${suffix}
    mode: service
    accounts:
      - name: ${ro}
        kubeconfigSecret: { name: kubeconfigs, key: ro }
        namespaces: [${ns.a}, ${ns.b}]
        access: read-only
        permissions: { READ: [team] }
        rbac: { serviceAccountNamespace: ${ns.sa} }
      - name: ${rw}
        kubeconfigSecret: { name: kubeconfigs, key: rw }
        permissions: { READ: [team], WRITE: [team] }
        rbac: { serviceAccountNamespace: ${ns.sa} }
      - name: ${live}
        kubeconfigSecret: { name: kc-live, key: live, watch: true }
        namespaces: [${ns.a}]
        permissions: { READ: [team] }
        rbac: { serviceAccountNamespace: ${ns.sa} }
  - name: edge-${suffix}
    mode: agent
    namespace: ${ns.agent}
    accounts:
      - name: ${edge}
        serviceAccount: true
        namespaces: [${ns.a}]
        permissions: { READ: [team], WRITE: [team] }
`;
  const file = join(work, 'topology.yaml');
  await writeFile(file, topology);
  result = await synthFile(file, { out: join(work, 'out') });
  // Apply in the order summary.json gives, with kustomize as an operator would.
  for (const p of result.summary.places) {
    await kubectl(['apply', '-k', join(work, 'out', 'kustomize', 'overlays', p.name)]);
  }
});

afterAll(async () => {
  for (const p of result?.summary.places ?? []) {
    await kubectl(
      ['delete', '--ignore-not-found', '--wait=false', '-f', join(work, 'out', 'manifests', `${p.name}.yaml`)],
      {
        allowFail: true,
      },
    );
  }
  await rm(work, { recursive: true, force: true });
});

describe('installed topology', () => {
  it('created every object summary.json lists', async () => {
    for (const p of result.summary.places) {
      for (const o of p.objects) {
        const args = ['get', o.kind, o.name, '-o', 'name', ...(o.namespace ? ['-n', o.namespace] : [])];
        const r = await kubectl(args, { allowFail: true });
        expect(r.code, `${p.name}: ${o.kind} ${o.namespace ?? ''}/${o.name}: ${r.stderr}`).toBe(0);
      }
    }
    const dep = await kubectl(['get', 'deployment', 'scale-agent-plugin-server', '-n', ns.cp, '-o', 'json']);
    expect(JSON.parse(dep.stdout).spec.template.metadata.labels['app.kubernetes.io/instance']).toBe(`it-${suffix}`);
  });

  it('read-only namespaced account: watch in its namespaces only, no writes, Secrets metadata only', async () => {
    const as = `system:serviceaccount:${ns.sa}:scale-agent-${ro}`;
    for (const n of [ns.a, ns.b]) {
      expect(await can(as, 'watch', 'deployments.apps', n)).toBe(true);
      expect(await can(as, 'list', 'pods', n)).toBe(true);
      expect(await can(as, 'get', 'pods/log', n)).toBe(true);
      expect(await can(as, 'list', 'secrets', n)).toBe(true);
      expect(await can(as, 'watch', 'secrets', n)).toBe(true);
      expect(await can(as, 'get', 'secrets', n)).toBe(false);
      expect(await can(as, 'create', 'deployments.apps', n)).toBe(false);
      expect(await can(as, 'delete', 'pods', n)).toBe(false);
      expect(await can(as, 'patch', 'deployments.apps', n)).toBe(false);
    }
    expect(await can(as, 'watch', 'deployments.apps', ns.other)).toBe(false);
    expect(await can(as, 'list', 'namespaces')).toBe(false);
  });

  it('read-write cluster-wide account: writes deployable kinds anywhere, nothing beyond', async () => {
    const as = `system:serviceaccount:${ns.sa}:scale-agent-${rw}`;
    expect(await can(as, 'create', 'deployments.apps', ns.other)).toBe(true);
    expect(await can(as, 'patch', 'deployments.apps/scale', ns.a)).toBe(true);
    expect(await can(as, 'delete', 'services', ns.b)).toBe(true);
    expect(await can(as, 'get', 'secrets', ns.other)).toBe(true);
    expect(await can(as, 'watch', 'namespaces')).toBe(true);
    expect(await can(as, 'delete', 'namespaces')).toBe(false);
    expect(await can(as, 'create', 'clusterroles.rbac.authorization.k8s.io')).toBe(false);
    expect(await can(as, 'list', 'nodes')).toBe(false);
    expect(await can(as, 'create', 'events', ns.a)).toBe(false);
  });

  it('agent-mode account: the agent pod ServiceAccount gets its account rights', async () => {
    const as = `system:serviceaccount:${ns.agent}:scale-agent-agent-edge-${suffix}`;
    expect(await can(as, 'watch', 'deployments.apps', ns.a)).toBe(true);
    expect(await can(as, 'create', 'deployments.apps', ns.a)).toBe(true);
    expect(await can(as, 'watch', 'deployments.apps', ns.b)).toBe(false);
    // The plugin-server's own ServiceAccount needs nothing.
    expect(await can(`system:serviceaccount:${ns.cp}:scale-agent-plugin-server`, 'list', 'pods', ns.cp)).toBe(false);
  });

  it('an agent reading a kubeconfig Secret live may get and watch that Secret by name, nothing else', async () => {
    const as = `system:serviceaccount:${ns.cp}:scale-agent-agent-core-${suffix}`;
    expect(await can(as, 'get', 'secrets/kc-live', ns.cp)).toBe(true);
    expect(await can(as, 'watch', 'secrets/kc-live', ns.cp)).toBe(true);
    expect(await can(as, 'get', 'secrets/kubeconfigs', ns.cp)).toBe(false);
    expect(await can(as, 'list', 'secrets', ns.cp)).toBe(false);
    expect(await can(as, 'watch', 'secrets', ns.cp)).toBe(false);
    expect(await can(as, 'get', 'secrets/kc-live', ns.other)).toBe(false);
    expect(await can(as, 'update', 'secrets/kc-live', ns.cp)).toBe(false);
    // The engine's own requests, as the agent makes them (src/agent/kube/secret-engine.ts): a GET by name and a watch
    // whose field selector pins the name; the same watch for another name, or for all, is refused.
    await kubectl(['create', 'secret', 'generic', 'kc-live', '-n', ns.cp, '--from-literal=live=x']);
    const raw = (path: string) => kubectl(['get', '--raw', path, `--as=${as}`], { allowFail: true });
    const secrets = `/api/v1/namespaces/${ns.cp}/secrets`;
    const watch = (name?: string) =>
      `${secrets}?watch=true&timeoutSeconds=1${name ? `&fieldSelector=metadata.name%3D${name}` : ''}`;
    const got = await raw(`${secrets}/kc-live`);
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout).data.live).toBe(Buffer.from('x').toString('base64'));
    const watched = await raw(watch('kc-live'));
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toContain('"name":"kc-live"');
    for (const refused of [watch('kubeconfigs'), watch(), `${secrets}/kubeconfigs`]) {
      const r = await raw(refused);
      expect(r.code, refused).not.toBe(0);
      expect(r.stderr, refused).toMatch(/forbidden/i);
    }
    // The config names the Secret by reference, the pod mounts its token and not that Secret.
    const dep = JSON.parse(
      (await kubectl(['get', 'deployment', `scale-agent-agent-core-${suffix}`, '-n', ns.cp, '-o', 'json'])).stdout,
    );
    expect(dep.spec.template.spec.automountServiceAccountToken).toBe(true);
    expect(JSON.stringify(dep.spec.template.spec.volumes)).not.toContain('kc-live');
  });

  it('helm renders the same Role and binding for the live-read Secret', async () => {
    const place = `agent-core-${suffix}`;
    const values = join(work, 'out', 'helm', `${place}.values.yaml`);
    const tpl = await helm(['template', 'x', join(ROOT, 'charts', 'scale-agent'), '-n', ns.cp, '-f', values]);
    const ofKind = (text: string, kind: string) =>
      parseAllDocuments(text)
        .map((d) => d.toJS() as Record<string, unknown> | null)
        .filter((o) => o?.kind === kind)
        .map((o) => {
          const { metadata, ...rest } = o as { metadata: { name: string } };
          return { name: metadata.name, ...rest };
        });
    const manifests = await readFile(join(work, 'out', 'manifests', `${place}.yaml`), 'utf8');
    for (const kind of ['Role', 'RoleBinding']) {
      const fromHelm = ofKind(tpl.stdout, kind);
      expect(fromHelm, kind).toHaveLength(1);
      expect(fromHelm, kind).toEqual(ofKind(manifests, kind));
    }
    const r = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: tpl.stdout, allowFail: true });
    expect(r.code, r.stderr).toBe(0);
  });

  it('the Deployments got ReplicaSets from the controller manager', async () => {
    for (let i = 0; i < 60; i++) {
      const r = await kubectl([
        'get',
        'replicasets',
        '-n',
        ns.cp,
        '-l',
        'app.kubernetes.io/component=plugin-server',
        '-o',
        'name',
      ]);
      if (r.stdout.trim() !== '') return;
      await new Promise((res) => setTimeout(res, 500));
    }
    throw new Error('no ReplicaSet for the plugin-server Deployment');
  });

  it('the gRPC Service carries appProtocol grpc and the AWS NLB annotations', async () => {
    const svc = JSON.parse(
      (await kubectl(['get', 'service', 'scale-agent-plugin-server-grpc', '-n', ns.cp, '-o', 'json'])).stdout,
    );
    expect(svc.spec.type).toBe('LoadBalancer');
    expect(svc.spec.ports[0]).toMatchObject({ name: 'grpc', port: 9091, appProtocol: 'grpc' });
    expect(svc.metadata.annotations['service.beta.kubernetes.io/aws-load-balancer-scheme']).toBe('internal');
  });

  it('helm installs the same place as a release', async () => {
    const values = join(work, 'out', 'helm', `account-${ro}.values.yaml`);
    const release = `sa-${suffix}`;
    // The Kustomize install owns these objects; render and dry-run instead of fighting over ownership.
    const tpl = await helm(['template', release, join(ROOT, 'charts', 'scale-agent'), '-n', ns.sa, '-f', values]);
    const r = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: tpl.stdout, allowFail: true });
    expect(r.code, r.stderr).toBe(0);
    expect(tpl.stdout).toContain(`name: scale-agent-account-${ro}`);
  });
});
