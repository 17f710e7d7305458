import { cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { versionInfo } from '../shared/version.js';
import { packageRoot } from './_package-root.js';
import { ensureTopologyCerts } from './certs.js';
import { ensureTopologySecrets } from './generated-secrets.js';
import { synthesize } from './synth.js';
import { loadTopology } from './validate.js';
import { writeOutput } from './write.js';

/**
 * kustomize/base/ and kustomize/overlays/<example>/<place>/ for every examples/<example>.yaml, synthesized with the example's committed
 * certificates and generated secrets (examples/certs/<example>/, example-only keys) so the result is stable. A unit test fails when the
 * committed overlays differ from this; `npx tsx src/compiler/examples.ts` rewrites them.
 */
export async function exampleOverlays(root = packageRoot()): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const examples = (await readdir(join(root, 'examples'))).filter((f) => f.endsWith('.yaml')).sort();
  for (const file of examples) {
    const name = basename(file, '.yaml');
    const { topology } = await loadTopology(join(root, 'examples', file));
    // Work on a copy so a missing certificate is issued in a temp dir (and shows up as drift), never in the repo.
    const tmp = await mkdtemp(join(tmpdir(), 'scale-agent-example-certs-'));
    try {
      await cp(join(root, 'examples', 'certs', name), tmp, { recursive: true }).catch(() => undefined);
      const certs = await ensureTopologyCerts(topology, tmp);
      const { secrets } = await ensureTopologySecrets(topology, tmp);
      const r = synthesize(topology, {
        overlayDepth: 1,
        version: versionInfo().version,
        ...(certs ? { tls: certs.material } : {}),
        secrets,
      });
      for (const [path, content] of r.files) {
        if (path.startsWith('kustomize/overlays/')) {
          out.set(`kustomize/overlays/${name}/${path.slice('kustomize/overlays/'.length)}`, content);
        } else if (path.startsWith('kustomize/base/')) {
          out.set(path, content);
        }
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  }
  return out;
}

/** Issues missing example certificates into examples/certs/ and rewrites kustomize/overlays/. */
export async function regenerateExampleOverlays(root = packageRoot()): Promise<string[]> {
  for (const file of (await readdir(join(root, 'examples'))).filter((f) => f.endsWith('.yaml'))) {
    const { topology } = await loadTopology(join(root, 'examples', file));
    const dir = join(root, 'examples', 'certs', basename(file, '.yaml'));
    await ensureTopologyCerts(topology, dir);
    await ensureTopologySecrets(topology, dir);
  }
  const files = await exampleOverlays(root);
  const { written, removed } = await writeOutput(root, new Map([...files].map(([p, c]) => [p, c])), {
    owned: ['kustomize/overlays', 'kustomize/base'],
    mode: 0o644,
  });
  return [...written, ...removed];
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const changed = await regenerateExampleOverlays();
  process.stdout.write(changed.length > 0 ? `updated:\n  ${changed.join('\n  ')}\n` : 'overlays up to date\n');
}
