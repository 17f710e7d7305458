import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { ApiException, AppsV1Api, CoreV1Api, KubeConfig, type V1ServiceAccount } from '@kubernetes/client-node';
import { adminKubeConfig, createNamespace, createServiceAccount, helm, kubectl, kustomize } from '../../infra/index.js';

// The versions tools/k8s pins; the binaries must report exactly these (ldflags / build info).
const pinned = Object.fromEntries(
  readFileSync(fileURLToPath(new URL('../../../tools/k8s/versions.env', import.meta.url)), 'utf8')
    .split('\n')
    .filter((l) => /^[A-Z0-9_]+=/.test(l))
    .map((l) => l.split('=') as [string, string]),
);

describe('shared control plane', () => {
  it('reports the real Kubernetes version from server and client', async () => {
    const { stdout } = await kubectl(['version', '-o', 'json']);
    const v = JSON.parse(stdout) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } };
    expect(v.serverVersion.gitVersion).toBe(pinned.K8S_VERSION);
    expect(v.clientVersion.gitVersion).toBe(pinned.K8S_VERSION);
  });

  it('enforces RBAC for a ServiceAccount token: allowed in its namespace, 403 in another', async () => {
    const ns = await createNamespace('rbac-own');
    const other = await createNamespace('rbac-other');
    await kubectl(['create', 'configmap', 'visible', '-n', ns, '--from-literal=a=b']);
    await kubectl(['create', 'configmap', 'hidden', '-n', other, '--from-literal=a=b']);
    const sa = await createServiceAccount({
      namespace: ns,
      name: 'reader',
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });

    const own = await kubectl(['--kubeconfig', sa.kubeconfigPath, 'get', 'configmaps', '-n', ns, '-o', 'name']);
    expect(own.stdout).toContain('configmap/visible');

    const denied = await kubectl(['--kubeconfig', sa.kubeconfigPath, 'get', 'configmaps', '-n', other], {
      allowFail: true,
    });
    expect(denied.code).not.toBe(0);
    expect(denied.stderr).toMatch(/Forbidden/);
    expect(denied.stderr).toContain(sa.username);

    // And the raw API agrees, through client-node with the token: 200 in its namespace, 403 in the other.
    const kc = new KubeConfig();
    kc.loadFromFile(sa.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const list = await core.listNamespacedConfigMap({ namespace: ns });
    expect(list.items.map((c) => c.metadata?.name)).toContain('visible');
    const err = await core.listNamespacedConfigMap({ namespace: other }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<unknown>).code).toBe(403);
  });

  it('runs the controller manager: a Deployment gets a ReplicaSet', async () => {
    const ns = await createNamespace('kcm');
    const kc = adminKubeConfig();
    const apps = kc.makeApiClient(AppsV1Api);
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 1,
          selector: { matchLabels: { app: 'web' } },
          template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
        },
      },
    });
    let owners: string[] = [];
    for (let i = 0; i < 150 && owners.length === 0; i++) {
      const rs = await apps.listNamespacedReplicaSet({ namespace: ns });
      owners = rs.items.flatMap((r) => (r.metadata?.ownerReferences ?? []).map((o) => `${o.kind}/${o.name}`));
      if (owners.length === 0) await sleep(200);
    }
    expect(owners).toEqual(['Deployment/web']);
    // The serviceaccount controller gave the new namespace its default ServiceAccount.
    const core = kc.makeApiClient(CoreV1Api);
    let sa: V1ServiceAccount | undefined;
    for (let i = 0; i < 150 && !sa; i++) {
      sa = await core.readNamespacedServiceAccount({ namespace: ns, name: 'default' }).catch(() => undefined);
      if (!sa) await sleep(200);
    }
    expect(sa?.metadata?.name).toBe('default');
  });

  it('rejects an invalid manifest on server-side dry run and creates nothing', async () => {
    const ns = await createNamespace('dryrun');
    const bad = JSON.stringify({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'broken', namespace: ns },
      spec: {
        replicas: 'three',
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } } },
      },
    });
    const res = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: bad, allowFail: true });
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/replicas|Invalid value|cannot unmarshal|containers/i);
    const after = await kubectl(['get', 'deployment', 'broken', '-n', ns], { allowFail: true });
    expect(after.stderr).toMatch(/NotFound/);

    const good = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ok', namespace: ns } });
    const dry = await kubectl(['apply', '--dry-run=server', '-f', '-'], { input: good });
    expect(dry.stdout).toMatch(/configmap\/ok created \(server dry run\)/);
  });
});

describe('helm and kustomize', () => {
  it('report the pinned versions', async () => {
    const h = await helm(['version', '--short']);
    expect(h.stdout.trim()).toBe(pinned.HELM_VERSION);
    const k = await kustomize(['version']);
    expect(k.stdout.trim()).toBe(pinned.KUSTOMIZE_VERSION);
  });

  it('helm assumes the pinned Kubernetes version when rendering offline (kube-version ldflags)', async () => {
    const chart = mkdtempSync(join(tmpdir(), 'chart-'));
    const minor = pinned.K8S_VERSION!.split('.')[1];
    writeFileSync(
      join(chart, 'Chart.yaml'),
      `apiVersion: v2\nname: probe\nversion: 0.1.0\nkubeVersion: ">=1.${minor}.0-0"\n`,
    );
    mkdirSync(join(chart, 'templates'));
    writeFileSync(
      join(chart, 'templates', 'cm.yaml'),
      'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: probe}\ndata: {kube: "{{ .Capabilities.KubeVersion.Version }}"}\n',
    );
    const out = await helm(['template', 'probe', chart]);
    expect(out.stdout).toContain(`kube: "v1.${minor}.0"`);
  });
});
