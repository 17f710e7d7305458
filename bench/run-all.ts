/**
 * `npm run bench [-- --quick]`: runs every benchmark (the long ones only when `--only` names them) in its own
 * process, one after another (they would skew each other in parallel on 2 cores), checks each printed a
 * well-formed result, and writes them all to bench/results/latest.json. Exit code 1 when a benchmark failed or
 * printed something malformed; a missed goal is data (met: false), not a failure. Each benchmark writes its temp
 * files (servers' data, certificates, control planes) into a directory of its own (TMPDIR), removed when it exits.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { repoRoot } from './lib/child.js';
import { BENCHMARKS, checkResult, LONG_BENCHMARKS } from './lib/registry.js';
import { flags, machineInfo, versions, type BenchResult } from './lib/report.js';

function runOne(script: string, quick: boolean): Promise<{ code: number; last: string }> {
  const temp = mkdtempSync(join(tmpdir(), `scale-agent-bench-${basename(script, '.ts')}-`));
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', script, ...(quick ? ['--quick'] : [])], {
      cwd: repoRoot,
      // The benchmark's temp files go into `temp`, root's alone; servers that run as their own user (PostgreSQL, as
      // test/infra/postgres.ts starts it under root) put their directory under the system's temp directory instead.
      env: {
        ...process.env,
        TMPDIR: temp,
        SCALE_AGENT_TEST_SYSTEM_TMPDIR: process.env.SCALE_AGENT_TEST_SYSTEM_TMPDIR ?? tmpdir(),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.on('close', (code) => {
      rmSync(temp, { recursive: true, force: true });
      resolve({ code: code ?? 1, last: out.trim().split('\n').pop() ?? '' });
    });
  });
}

const f = flags({ only: { type: 'string' }, out: { type: 'string', default: 'bench/results/latest.json' } });
const selected = [...BENCHMARKS, ...(f.only ? LONG_BENCHMARKS : [])]
  .filter((b) => existsSync(join(repoRoot, b)))
  .filter(
    (b) =>
      !f.only ||
      String(f.only)
        .split(',')
        .some((o) => b.includes(o)),
  );
const results: BenchResult[] = [];
const failures: string[] = [];
for (const script of selected) {
  process.stderr.write(`[bench] ${script}${f.quick ? ' --quick' : ''}\n`);
  const t0 = Date.now();
  const { code, last } = await runOne(script, Boolean(f.quick));
  let parsed: unknown;
  try {
    parsed = JSON.parse(last);
  } catch {
    parsed = undefined;
  }
  const problems = code !== 0 ? [`exit code ${code}`] : checkResult(parsed);
  if (problems.length) failures.push(`${script}: ${problems.join('; ')}`);
  else results.push(parsed as BenchResult);
  process.stderr.write(`[bench] ${script} done in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
}
const out = resolve(repoRoot, String(f.out));
mkdirSync(join(out, '..'), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    { quick: Boolean(f.quick), machine: machineInfo(), versions: versions(), results, failures },
    null,
    2,
  ) + '\n',
);
for (const r of results) process.stdout.write(`${r.met ? 'met   ' : 'missed'} ${r.name}\n`);
for (const x of failures) process.stdout.write(`FAILED ${x}\n`);
process.stdout.write(`wrote ${out}\n`);
process.exit(failures.length ? 1 : 0);
