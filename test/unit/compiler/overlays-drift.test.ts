import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exampleOverlays } from '../../../src/compiler/examples.js';
import { ROOT } from './_helpers.js';

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...(await listFiles(join(dir, e.name), `${prefix}${e.name}/`)));
    else out.push(`${prefix}${e.name}`);
  }
  return out;
}

describe('kustomize/base and kustomize/overlays', () => {
  it('match what synth produces from examples/ (regenerate with `npx tsx src/compiler/examples.ts`)', async () => {
    const expected = await exampleOverlays(ROOT);
    const committed = [
      ...(await listFiles(join(ROOT, 'kustomize', 'overlays'))).map((f) => `kustomize/overlays/${f}`),
      ...(await listFiles(join(ROOT, 'kustomize', 'base'))).map((f) => `kustomize/base/${f}`),
    ].sort();
    expect(committed).toEqual([...expected.keys()].sort());
    for (const [path, content] of expected) {
      expect(await readFile(join(ROOT, path), 'utf8'), path).toBe(content);
    }
    const examples = ['agent', 'infrastructure', 'mixed', 'service'];
    const overlays = [...expected.keys()].filter((p) => p.startsWith('kustomize/overlays/'));
    expect([...new Set(overlays.map((p) => p.split('/')[2]))].sort()).toEqual(examples);
  });

  it('keep the base image tag at the package version', async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    for (const c of ['agent', 'plugin-server']) {
      const dep = await readFile(join(ROOT, 'kustomize/base', c, 'deployment.yaml'), 'utf8');
      expect(dep).toMatch(
        new RegExp(`image: "?ghcr\\.io/scale-agent/scale-agent:${pkg.version.replace(/\./g, '\\.')}"?$`, 'm'),
      );
    }
    const chart = await readFile(join(ROOT, 'charts/scale-agent/Chart.yaml'), 'utf8');
    expect(chart).toMatch(new RegExp(`^appVersion: ['"]?${pkg.version.replace(/\./g, '\\.')}['"]?$`, 'm'));
  });
});
