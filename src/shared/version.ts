import { readFileSync } from 'node:fs';

/** The package's own metadata, read once from package.json next to dist/ or src/. */
export interface VersionInfo {
  name: string;
  version: string;
  node: string;
  platform: string;
  arch: string;
}

let cached: VersionInfo | undefined;

export function versionInfo(): VersionInfo {
  if (!cached) {
    // src/shared and dist/src/shared both sit a fixed number of levels below package.json; try both.
    const candidates = ['../../package.json', '../../../package.json'].map((p) => new URL(p, import.meta.url));
    let pkg: { name: string; version: string } | undefined;
    for (const url of candidates) {
      try {
        const parsed = JSON.parse(readFileSync(url, 'utf8')) as { name?: string; version?: string };
        if (parsed.name === 'scale-agent' && parsed.version) {
          pkg = { name: parsed.name, version: parsed.version };
          break;
        }
      } catch {
        // try the next candidate
      }
    }
    cached = {
      name: pkg?.name ?? 'scale-agent',
      version: pkg?.version ?? '0.0.0-unknown',
      node: process.version,
      platform: process.platform,
      arch: process.arch,
    };
  }
  return cached;
}
