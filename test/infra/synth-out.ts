import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { synthFile } from '../../src/compiler/index.js';

const ROOT = new URL('../../', import.meta.url).pathname;

/**
 * examples/mixed.yaml synthesised into a new temp directory (named from `prefix`) with synth's own NetworkPolicies
 * off, and kustomize/components copied beside the overlays: an install made from the base alone, to which the
 * components add what they add. Returns the directory; the caller removes it.
 */
export async function synthForComponents(prefix: string): Promise<string> {
  const out = await mkdtemp(join(tmpdir(), prefix));
  const topology = join(out, 'mixed-without-policies.yaml');
  const mixed = await readFile(join(ROOT, 'examples', 'mixed.yaml'), 'utf8');
  await writeFile(topology, `${mixed}\nnetworkPolicies: { enabled: false }\n`);
  await synthFile(topology, { out });
  await cp(join(ROOT, 'kustomize', 'components'), join(out, 'kustomize', 'components'), { recursive: true });
  return out;
}
