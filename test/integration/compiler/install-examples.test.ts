/**
 * The promise of `synth`: its output installs. Every example topology is synthesized and applied for real, place by
 * place in summary.json's order, with `kubectl apply -k` of each overlay (the command the summary prints), onto a
 * fresh control plane of its own (examples share names such as the `spinnaker` namespace). Then every object the
 * summary lists must exist on the API server. Every namespace enforces the restricted Pod Security Standard (synth
 * labels the namespaces it owns; the test labels the shared ones as a platform team would), so the API server's
 * PodSecurity admission rejects any pod that violates it: each Deployment's ReplicaSet must create all its pods.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthFile } from '../../../src/compiler/index.js';
import { ControlPlane, run } from '../../infra/index.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const EXAMPLES = ['service', 'infrastructure', 'agent', 'mixed'];

interface Place {
  name: string;
  order: number;
  namespace: string;
  kustomize: string;
  objects: { kind: string; name: string; namespace?: string }[];
}

const RESTRICTED = ['pod-security.kubernetes.io/enforce=restricted', 'pod-security.kubernetes.io/warn=restricted'];

type Kubectl = (args: string[], allowFail?: boolean) => Promise<{ code: number; stdout: string; stderr: string }>;

interface ReplicaSet {
  metadata: { namespace: string; name: string };
  spec: { replicas: number };
  status: { replicas?: number; conditions?: { type: string; message: string }[] };
}

/**
 * Waits until every ReplicaSet created all its pods (each pod passed PodSecurity admission), failing at once on a
 * ReplicaFailure (the controller's report of a rejected pod). No scheduler runs: the pods stay Pending, admitted.
 */
async function expectAllPodsAdmitted(kubectl: Kubectl): Promise<void> {
  for (;;) {
    const deployments = JSON.parse((await kubectl(['get', 'deployments', '-A', '-o', 'json'])).stdout) as {
      items: { spec: { replicas: number } }[];
    };
    const sets = (
      JSON.parse((await kubectl(['get', 'replicasets', '-A', '-o', 'json'])).stdout) as { items: ReplicaSet[] }
    ).items;
    const failed = sets.flatMap((rs) =>
      (rs.status.conditions ?? [])
        .filter((c) => c.type === 'ReplicaFailure')
        .map((c) => `${rs.metadata.namespace}/${rs.metadata.name}: ${c.message}`),
    );
    expect(failed).toEqual([]);
    const want = deployments.items.reduce((n, d) => n + d.spec.replicas, 0);
    const have = sets.reduce((n, rs) => n + (rs.status.replicas ?? 0), 0);
    if (deployments.items.length > 0 && sets.length === deployments.items.length && have === want) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}

let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'scale-agent-install-examples-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

describe.each(EXAMPLES)('example %s', (example) => {
  it('applies place by place with kubectl apply -k, and every listed object exists', async () => {
    const out = join(work, example);
    await synthFile(join(ROOT, 'examples', `${example}.yaml`), { out });
    const summary = JSON.parse(await readFile(join(out, 'summary.json'), 'utf8')) as { places: Place[] };
    const cp = await ControlPlane.start({ dir: join(work, `${example}-cp`) });
    try {
      const kubectl = (args: string[], allowFail = false) =>
        run(join(cp.binDir, 'kubectl'), ['--kubeconfig', cp.kubeconfig, ...args], { allowFail, cwd: out });
      // Namespaces synth deliberately does not own (shared ones such as `spinnaker`, and account namespaces)
      // exist before an install, as the summary's instructions assume.
      const owned = new Set(
        summary.places.flatMap((p) => p.objects.filter((o) => o.kind === 'Namespace').map((o) => o.name)),
      );
      const namespaces = new Set(summary.places.flatMap((p) => [p.namespace, ...p.objects.map((o) => o.namespace)]));
      for (const ns of namespaces) {
        if (!ns || owned.has(ns)) continue;
        await kubectl(['create', 'namespace', ns], true);
        await kubectl(['label', '--overwrite', 'namespace', ns, ...RESTRICTED]);
      }

      const places = [...summary.places].sort((a, b) => a.order - b.order);
      expect(places.length).toBeGreaterThan(1);
      for (const place of places) {
        const r = await kubectl(['apply', '-k', place.kustomize], true);
        expect(r.code, `${place.name}: ${r.stderr}`).toBe(0);
        expect(r.stderr, place.name).not.toMatch(/PodSecurity/);
      }
      for (const ns of namespaces) {
        if (!ns) continue;
        const labels = JSON.parse((await kubectl(['get', 'namespace', ns, '-o', 'json'])).stdout) as {
          metadata: { labels: Record<string, string> };
        };
        expect(labels.metadata.labels['pod-security.kubernetes.io/enforce'], ns).toBe('restricted');
      }
      await expectAllPodsAdmitted(kubectl);
      const missing: string[] = [];
      for (const place of places) {
        for (const o of place.objects) {
          const args = ['get', o.kind, o.name, '-o', 'name', ...(o.namespace ? ['-n', o.namespace] : [])];
          const r = await kubectl(args, true);
          if (r.code !== 0) missing.push(`${place.name}: ${o.kind} ${o.namespace ?? ''}/${o.name}: ${r.stderr.trim()}`);
        }
      }
      expect(missing).toEqual([]);
    } finally {
      await cp.stop();
    }
  }, 240_000);
});
