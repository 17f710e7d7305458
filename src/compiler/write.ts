import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ScaleAgentError } from '../shared/errors.js';

/**
 * Writes the synthesized files and removes files synth wrote earlier that are no longer produced (only inside the
 * directories synth owns: kustomize/, helm/, manifests/), so a renamed agent group leaves no stale overlay.
 * Unchanged files are not rewritten. Files are created 0600 by default: overlays and values may hold private keys.
 */
export async function writeOutput(
  outDir: string,
  files: Map<string, string>,
  options: { owned?: string[]; mode?: number } = {},
): Promise<{ written: string[]; removed: string[] }> {
  const removed: string[] = [];
  const existing = new Set<string>();
  for (const owned of options.owned ?? ['kustomize', 'helm', 'manifests']) {
    for (const f of await listFiles(join(outDir, owned))) {
      const rel = `${owned}/${f}`;
      existing.add(rel);
      if (!files.has(rel)) {
        await rm(join(outDir, rel));
        removed.push(rel);
      }
    }
  }
  // Synchronous on purpose: thousands of small files go several times faster than through the thread pool.
  const dirs = [...new Set([...files.keys()].map((rel) => dirname(join(outDir, rel))))].sort();
  for (const d of dirs) mkdirSync(d, { recursive: true });
  const written: string[] = [];
  for (const [rel, content] of files) {
    const path = join(outDir, rel);
    if ((existing.has(rel) || !rel.includes('/')) && readIfExists(path) === content) continue;
    writeFileSync(path, content, { mode: options.mode ?? 0o600 });
    written.push(rel);
  }
  return { written, removed };
}

/**
 * Refuses an output directory that cannot be one (the path or one of its parents is a regular file) before anything
 * is written, so a mistyped --out fails with a message naming the path instead of a half-written tree.
 */
export async function assertOutputDirectory(dir: string, flag: string): Promise<void> {
  let p = resolve(dir);
  for (;;) {
    let isDir: boolean;
    try {
      isDir = (await stat(p)).isDirectory();
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if ((code === 'ENOENT' || code === 'ENOTDIR') && dirname(p) !== p) {
        p = dirname(p);
        continue;
      }
      throw new ScaleAgentError('INVALID_INPUT', `${flag} ${dir}: cannot use ${p}: ${(cause as Error).message}`, {
        cause,
        details: [{ file: dir, message: `cannot use ${p} as an output directory` }],
      });
    }
    if (isDir) return;
    const problem = p === resolve(dir) ? 'is a file, not a directory' : `cannot be created: ${p} is a file`;
    throw new ScaleAgentError('INVALID_INPUT', `${flag} ${dir} ${problem}; nothing was written`, {
      details: [{ file: dir, message: `${flag} must name a directory (existing or to be created); it ${problem}` }],
    });
  }
}

function readIfExists(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
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
