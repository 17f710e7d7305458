/** Every benchmark `npm run bench` runs, and what a well-formed result must hold. */

/**
 * In the order of the README's Performance table. Initial sync is measured inside live-cache (same control
 * plane and processes; `--objects N` sets its size, 10,000 by default, 100,000 for the DESIGN goal).
 */
export const BENCHMARKS = [
  'bench/live-cache.ts',
  'bench/stream-throughput.ts',
  'bench/agent-memory.ts',
  'bench/server-capacity.ts',
  'bench/cost.ts',
  'bench/operations.ts',
  'bench/spinnaker-views.ts',
  'bench/compiler.ts',
];

/** Long benchmarks (tens of minutes), run only when `--only` names them: `npm run bench -- --only mysql-scale`. */
export const LONG_BENCHMARKS = ['bench/mysql-scale.ts'];

const REQUIRED = ['name', 'params', 'machine', 'versions', 'figures', 'goal', 'met'] as const;

export function checkResult(x: unknown): string[] {
  if (typeof x !== 'object' || x === null) return ['not a JSON object'];
  const o = x as Record<string, unknown>;
  const problems = REQUIRED.filter((k) => !(k in o)).map((k) => `missing "${k}"`);
  if ('met' in o && typeof o.met !== 'boolean') problems.push('"met" is not a boolean');
  if ('name' in o && typeof o.name !== 'string') problems.push('"name" is not a string');
  return problems;
}
