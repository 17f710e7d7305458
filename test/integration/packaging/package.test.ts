import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

describe('container image and npm package', () => {
  it('every COPY source in the Dockerfile exists in the repository or the build stage', () => {
    const lines = readFileSync(join(root, 'Dockerfile'), 'utf8').split('\n');
    const copies = lines.filter((l) => /^COPY\s/.test(l));
    expect(copies.length).toBeGreaterThan(3);
    const missing: string[] = [];
    for (const line of copies) {
      if (line.includes('--from=')) continue; // comes from the build stage (dist/, checked by the npm build)
      const parts = line.replace(/^COPY\s+/, '').split(/\s+/);
      for (const src of parts.slice(0, -1)) if (!existsSync(join(root, src))) missing.push(src);
    }
    expect(missing).toEqual([]);
    // Non-root and the CLI as entrypoint.
    expect(lines.some((l) => /^USER\s+(?!root|0\b)/.test(l))).toBe(true);
    expect(lines.find((l) => l.startsWith('ENTRYPOINT'))).toContain('bin/run.js');
  });

  it('a packed tarball installs into a clean directory and its scale-agent entrypoint runs', async () => {
    const out = mkdtempSync(join(tmpdir(), 'pack-'));
    // --ignore-scripts: dist/ is already built by `npm test`; packing must not rebuild mid-suite.
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], {
      cwd: root,
      timeoutMs: 120_000,
    });
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    const files = info!.files.map((f) => f.path);
    expect(files).toContain('bin/run.js');
    expect(files).toContain('dist/src/cli/commands/version.js');
    expect(files.some((f) => f.startsWith('test/') || f.startsWith('src/'))).toBe(false);

    const app = mkdtempSync(join(tmpdir(), 'install-'));
    writeFileSync(join(app, 'package.json'), '{"name":"probe","private":true}');
    await run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', join(out, info!.filename)], {
      cwd: app,
      timeoutMs: 300_000,
    });
    const bin = join(app, 'node_modules', '.bin', 'scale-agent');
    const version = await run(bin, ['version', '--json'], { cwd: app });
    const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
    expect(JSON.parse(version.stdout)).toMatchObject({ name: 'scale-agent', version: pkg.version });
    const help = await run(bin, ['--help'], { cwd: app });
    expect(help.stdout).toMatch(/COMMANDS[\s\S]*version/);
  }, 400_000);
});
