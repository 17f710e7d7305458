import { mkdtempSync, readlinkSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run, testEnv } from '../../infra/index.js';
import { ALL_TOOLS } from '../../infra/k8s-tools.js';

const buildScript = fileURLToPath(new URL('../../../tools/k8s/build.sh', import.meta.url));

describe('npm run k8s:tools', () => {
  it('uses KUBEBUILDER_ASSETS when it holds the binaries and builds nothing', async () => {
    // An envtest-style assets dir holding every binary (links to the ones this run uses).
    const assets = mkdtempSync(join(tmpdir(), 'kb-assets-'));
    for (const b of ALL_TOOLS) symlinkSync(join(testEnv().binDir, b), join(assets, b));
    // An empty cache: anything the script decided to build would have to be compiled from scratch here.
    const cache = mkdtempSync(join(tmpdir(), 'k8s-cache-'));
    const res = await run('bash', [buildScript], {
      env: { KUBEBUILDER_ASSETS: assets, SCALE_AGENT_K8S_CACHE: cache },
      timeoutMs: 60_000,
    });
    expect(res.stderr).not.toMatch(/building/);
    expect(res.stderr.match(/using KUBEBUILDER_ASSETS/g)).toHaveLength(15);
    const dir = res.stdout.trim().split('\n').pop()!;
    expect(dir.startsWith(cache)).toBe(true);
    for (const b of ALL_TOOLS) expect(readlinkSync(join(dir, b))).toBe(join(assets, b));
    const v = await run(join(dir, 'kubectl'), ['version', '--client', '-o', 'json']);
    expect(JSON.parse(v.stdout).clientVersion.gitVersion).toMatch(/^v1\.\d+\.\d+$/);
  });
});
