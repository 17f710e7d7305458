/**
 * What every benchmark prints: one JSON object with its parameters, the machine and versions it ran on, the
 * measured figures, the same-run baseline where it has one, the goal from the README's Performance table, and whether the goal
 * is met — so a script can tell which goals hold, and a reader can judge the numbers.
 */
import { readFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs, type ParseArgsConfig } from 'node:util';

export interface BenchResult {
  name: string;
  params: Record<string, unknown>;
  machine: MachineInfo;
  versions: Record<string, string>;
  figures: Record<string, unknown>;
  /** Same-run measurement of the physical limit the figures are compared with. */
  baseline?: Record<string, unknown>;
  /** figure / baseline, where that ratio is what the goal is about. */
  ratios?: Record<string, number>;
  goal: Record<string, unknown>;
  met: boolean;
  notes?: string[];
}

export interface MachineInfo {
  cores: number;
  cpuModel: string;
  memoryBytes: number;
  platform: string;
  arch: string;
}

const root = fileURLToPath(new URL('../..', import.meta.url));

export function machineInfo(): MachineInfo {
  const c = cpus();
  return {
    cores: c.length,
    cpuModel: c[0]?.model ?? 'unknown',
    memoryBytes: totalmem(),
    platform: process.platform,
    arch: process.arch,
  };
}

function packageVersion(name: string): string {
  try {
    const p = JSON.parse(readFileSync(`${root}/node_modules/${name}/package.json`, 'utf8')) as { version: string };
    return p.version;
  } catch {
    return 'unknown';
  }
}

export function versions(): Record<string, string> {
  const own = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { version: string };
  const pinned = Object.fromEntries(
    readFileSync(`${root}/tools/k8s/versions.env`, 'utf8')
      .split('\n')
      .filter((l) => /^[A-Z0-9_]+=/.test(l))
      .map((l) => l.split('=') as [string, string]),
  );
  return {
    scaleAgent: own.version,
    node: process.version,
    grpcJs: packageVersion('@grpc/grpc-js'),
    kubernetes: pinned.K8S_VERSION ?? 'unknown',
    etcd: pinned.ETCD_VERSION ?? 'unknown',
  };
}

export interface Distribution {
  count: number;
  min: number;
  p50: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles; values rounded to 3 decimals so the JSON stays readable. */
export function distribution(samples: number[]): Distribution {
  const s = [...samples].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
  const r = (x: number) => Math.round(x * 1000) / 1000;
  return {
    count: s.length,
    min: r(s[0] ?? NaN),
    p50: r(at(0.5)),
    p95: r(at(0.95)),
    p99: r(at(0.99)),
    max: r(s[s.length - 1] ?? NaN),
    mean: r(s.reduce((a, b) => a + b, 0) / (s.length || 1)),
  };
}

/** Prints the result as the last line on stdout (progress goes to stderr). */
export function emit(result: BenchResult): void {
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

export function progress(msg: string): void {
  process.stderr.write(`[bench] ${msg}\n`);
}

/** node:util parseArgs with the flag every benchmark has: --quick (CI smoke mode, well under 3 minutes). */
export function flags<T extends NonNullable<ParseArgsConfig['options']>>(options: T) {
  return parseArgs({ options: { quick: { type: 'boolean', default: false }, ...options }, strict: true }).values;
}
