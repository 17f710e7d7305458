import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { run } from '../../infra/index.js';
import { BENCHMARKS, checkResult } from '../../../bench/lib/registry.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));

// CI smoke: every benchmark runs in --quick mode and prints a well-formed result. The numbers are not judged
// here (timing thresholds do not belong in tests); `npm run bench` is where they are read.
describe('npm run bench -- --quick', () => {
  it('runs every benchmark and writes well-formed results', async () => {
    const out = join(mkdtempSync(join(tmpdir(), 'bench-')), 'latest.json');
    const temp = mkdtempSync(join(tmpdir(), 'bench-tmp-'));
    const res = await run(process.execPath, ['--import', 'tsx', 'bench/run-all.ts', '--quick', '--out', out], {
      cwd: root,
      env: { TMPDIR: temp },
      allowFail: true,
      timeoutMs: 600_000,
    });
    const written = JSON.parse(readFileSync(out, 'utf8')) as {
      results: { name: string; machine: { cores: number } }[];
      failures: string[];
    };
    expect(written.failures, res.stderr.slice(-4000)).toEqual([]);
    expect(res.code).toBe(0);
    for (const r of written.results) {
      expect(checkResult(r)).toEqual([]);
      expect(r.machine.cores).toBeGreaterThan(0);
    }
    // One result per registered benchmark: a benchmark that vanished or stopped printing fails here.
    expect(written.results.map((r) => r.name).sort()).toEqual(
      BENCHMARKS.map((b) => b.replace(/^bench\/(.*)\.ts$/, '$1')).sort(),
    );
    // The benchmarks' servers, certificates and control planes leave nothing in the temp directory (tsx, which
    // runs the runner itself, keeps its compile cache there).
    expect(readdirSync(temp).filter((e) => !e.startsWith('tsx-'))).toEqual([]);
  }, 660_000);
});
