/**
 * kustomize/components: each optional feature added to a generated overlay with `components:` builds with the real
 * kustomize, picks up the overlay's namespace, name suffix and instance label, and the NetworkPolicy components
 * clear kube-score's NetworkPolicy CRITICAL (the one finding the plain manifests keep on purpose).
 */
import { appendFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { kubeScore, kustomize } from '../../infra/index.js';
import { synthForComponents } from '../../infra/synth-out.js';

type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { podSelector?: { matchLabels: Record<string, string> }; selector?: { matchLabels: Record<string, string> } };
};

let out: string;
beforeAll(async () => {
  out = await synthForComponents('scale-agent-components-');
});
afterAll(async () => {
  await rm(out, { recursive: true, force: true });
});

async function buildWith(place: string, components: string[]): Promise<{ text: string; objects: Obj[] }> {
  const workload = join(out, 'kustomize', 'overlays', place, 'workload');
  await appendFile(
    join(workload, 'kustomization.yaml'),
    `components:\n${components.map((c) => `  - ../../../components/${c}\n`).join('')}`,
  );
  const r = await kustomize(['build', join(out, 'kustomize', 'overlays', place)]);
  return { text: r.stdout, objects: parseAllDocuments(r.stdout).map((d) => d.toJS() as Obj) };
}

const find = (objs: Obj[], kind: string) => objs.find((o) => o.kind === kind);

describe('kustomize components over generated overlays', () => {
  let ps: { text: string; objects: Obj[] };
  let agent: { text: string; objects: Obj[] };
  beforeAll(async () => {
    ps = await buildWith('plugin-server', [
      'network-policy-plugin-server',
      'service-monitor-plugin-server',
      'cert-manager-tls-plugin-server',
    ]);
    agent = await buildWith('agent-remote', ['network-policy-agent', 'pdb-agent']);
  });

  it('plugin-server: NetworkPolicy and ServiceMonitor in the overlay namespace, TLS from cert-manager', () => {
    const np = find(ps.objects, 'NetworkPolicy');
    expect(np?.metadata).toEqual(
      expect.objectContaining({ name: 'scale-agent-plugin-server', namespace: 'spinnaker' }),
    );
    expect(np?.spec?.podSelector?.matchLabels).toMatchObject({
      'app.kubernetes.io/component': 'plugin-server',
      'app.kubernetes.io/instance': 'mixed',
    });
    expect(find(ps.objects, 'ServiceMonitor')?.metadata.namespace).toBe('spinnaker');
    expect(find(ps.objects, 'Certificate')?.metadata.name).toBe('scale-agent-plugin-server');
    expect(ps.objects.filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)).not.toContain(
      'scale-agent-plugin-server-tls',
    );
  });

  it('agent: NetworkPolicy and PodDisruptionBudget get the group suffix and select only its pods', () => {
    const np = find(agent.objects, 'NetworkPolicy');
    expect(np?.metadata).toEqual(
      expect.objectContaining({ name: 'scale-agent-agent-remote', namespace: 'scale-agent' }),
    );
    expect(np?.spec?.podSelector?.matchLabels['app.kubernetes.io/instance']).toBe('remote');
    expect(find(agent.objects, 'PodDisruptionBudget')?.spec?.selector?.matchLabels['app.kubernetes.io/instance']).toBe(
      'remote',
    );
  });

  it('kube-score: with the NetworkPolicy components, no NetworkPolicy CRITICAL remains', async () => {
    const file = join(out, 'with-components.yaml');
    // The ServiceMonitor and Certificate are CRDs kube-score does not know; it skips them.
    await writeFile(file, `${ps.text}---\n${agent.text}`);
    const r = await kubeScore(['score', '--output-format', 'ci', file], { allowFail: true });
    expect(r.stdout).toMatch(/apps\/v1\/Deployment/);
    expect(r.stdout.split('\n').filter((l) => l.startsWith('[CRITICAL]') && /NetworkPolicy/.test(l))).toEqual([]);
  });

  it('images: pinning: `kustomize edit set image` in a workload retargets the place', async () => {
    const workload = join(out, 'kustomize', 'overlays', 'agent-core', 'workload');
    await kustomize(['edit', 'set', 'image', 'ghcr.io/scale-agent/scale-agent=registry.example.com/sa:9.9.9'], {
      cwd: workload,
    });
    const r = await kustomize(['build', join(out, 'kustomize', 'overlays', 'agent-core')]);
    const dep = parseAllDocuments(r.stdout)
      .map((d) => d.toJS() as { kind: string; spec: { template: { spec: { containers: { image: string }[] } } } })
      .find((o) => o.kind === 'Deployment');
    expect(dep?.spec.template.spec.containers[0]?.image).toBe('registry.example.com/sa:9.9.9');
  });
});
