import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';

/**
 * Writes the synthesized files and removes files synth wrote earlier that are no longer produced (only inside the
 * directories synth owns: kustomize/, helm/, manifests/), so a renamed agent group leaves no stale overlay.
 * Unchanged files are not rewritten.
 */
export async function writeOutput(
  outDir: string,
  files: Map<string, string>,
  options: { owned?: string[]; mode?: number } = {},
): Promise<{ written: string[]; removed: string[] }> {
  const written: string[] = [];
  const removed: string[] = [];
  for (const owned of options.owned ?? ['kustomize', 'helm', 'manifests']) {
    for (const f of await listFiles(join(outDir, owned))) {
      const rel = `${owned}/${f}`;
      if (!files.has(rel)) {
        await rm(join(outDir, rel));
        removed.push(rel);
      }
    }
  }
  for (const [rel, content] of files) {
    const path = join(outDir, rel);
    const old = await readFile(path, 'utf8').catch(() => undefined);
    if (old === content) continue;
    await mkdir(dirname(path), { recursive: true });
    // Overlays and values files may hold private keys.
    await writeFile(path, content, { mode: options.mode ?? 0o600 });
    written.push(rel);
  }
  return { written, removed };
}

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string, prefix: string): Promise<void> => {
    let entries;
    try {
      entries = await readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.isDirectory()) await walk(join(d, e.name), `${prefix}${e.name}/`);
      else out.push(`${prefix}${e.name}`);
    }
  };
  await walk(dir, '');
  return out;
}
