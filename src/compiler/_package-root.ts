import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * The directory holding scale-agent's package.json (schemas/, kustomize/base/ and charts/ sit next to it). Found by
 * walking up from this file, so it works from src/compiler (tsx, vitest) and dist/src/compiler (built CLI) alike.
 */
export function packageRoot(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        if ((JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'scale-agent') {
          cached = dir;
          return dir;
        }
      } catch {
        // not ours; keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) throw new Error('scale-agent package root not found above ' + fileURLToPath(import.meta.url));
    dir = up;
  }
}
