/**
 * Self time per function of a V8 `.cpuprofile` (from `node --cpu-prof`), over a window of the run, for the profiles
 * in bench/profiles/. Benchmarks print their phases' bounds in the same clock (the monotonic clock, microseconds:
 * `process.hrtime.bigint() / 1000n` is what V8 stamps its samples with), so only the phase measured is counted.
 *
 *   npx tsx bench/lib/profile-summary.ts <file.cpuprofile> [--from <µs>] [--to <µs>] [--per <n>] [--top 40]
 *
 * `--per n` adds each frame's self time divided by n/1000 (e.g. the phase's changes: ms per 1,000 changes).
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    from: { type: 'string' },
    to: { type: 'string' },
    per: { type: 'string' },
    top: { type: 'string', default: '40' },
  },
});
const file = positionals[0];
if (!file) {
  console.error('usage: profile-summary <file.cpuprofile> [--from µs] [--to µs] [--per n] [--top n]');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const from = values.from ? Number(values.from) : -Infinity;
const to = values.to ? Number(values.to) : Infinity;
const per = values.per ? Number(values.per) : undefined;

const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<string, number>();
let t = profile.startTime;
let totalUs = 0;
let idleUs = 0;
for (let i = 0; i < profile.samples.length; i++) {
  t += profile.timeDeltas[i]!;
  // A sample's weight is the time until the next one (the last one's, the delta before it).
  const weight = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i]!;
  if (t < from || t > to) continue;
  const node = byId.get(profile.samples[i]!)!;
  const f = node.callFrame;
  totalUs += weight;
  if (f.functionName === '(idle)') {
    idleUs += weight;
    continue;
  }
  const where = f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : '';
  const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
  selfUs.set(key, (selfUs.get(key) ?? 0) + weight);
}

function shortUrl(url: string): string {
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) return url.slice(nm + 'node_modules/'.length);
  const dist = url.indexOf('/dist/');
  if (dist >= 0) return url.slice(dist + 1);
  return url.replace(/^file:\/\//, '');
}

const busyUs = totalUs - idleUs;
const rows = [...selfUs.entries()].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top));
console.log(
  `window ${(totalUs / 1000).toFixed(0)} ms, busy ${(busyUs / 1000).toFixed(0)} ms` +
    (per ? ` (${((busyUs / 1000 / per) * 1000).toFixed(1)} ms per 1,000)` : ''),
);
for (const [key, us] of rows) {
  const pct = ((us / busyUs) * 100).toFixed(1).padStart(5);
  const perK = per ? `${((us / 1000 / per) * 1000).toFixed(2).padStart(7)} ms/1k  ` : '';
  console.log(`${pct}%  ${perK}${key}`);
}
