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
import { expectAllPodsAdmitted, RESTRICTED } from '../../infra/pod-security.js';

const ROOT = new URL('../../../', import.meta.url).pathname;
const EXAMPLES = ['service', 'infrastructure', 'agent', 'mixed'];

interface Place {
  name: string;
  order: number;
  namespace: string;
  kustomize: string;
  objects: { kind: string; name: string; namespace?: string }[];
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
