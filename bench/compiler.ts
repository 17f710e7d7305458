/**
 * Compiler: `scale-agent synth` of a generated topology with 1,000 accounts (10 agent groups: one in mode service,
 * nine in mode infrastructure; half the accounts namespace-scoped with two namespaces each), end to end as the
 * CLI runs it: read + validate + certificates (reused after the first run, as with --certs-dir) + synthesize +
 * write. Goals (README's Performance section): ≤ 5 s, and ≤ 1.5× a bare loop writing the same files (median of pairs).
 *
 *   npx tsx bench/compiler.ts [--quick] [--accounts 1000] [--runs 9]
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { synthFile } from '../src/compiler/index.js';
import { distribution, emit, flags, machineInfo, progress, versions } from './lib/report.js';

const f = flags({ accounts: { type: 'string', default: '1000' }, runs: { type: 'string', default: '9' } });
const accounts = Number(f.accounts);
const runs = f.quick ? 1 : Number(f.runs);
const GOAL_MS = 5000;
const GOAL_RATIO = 1.5;

function topology(n: number): unknown {
  const groups = 10;
  const perGroup = Math.ceil(n / groups);
  return {
    apiVersion: 'scale-agent.io/v1alpha1',
    kind: 'Topology',
    metadata: { name: 'bench' },
    pluginServer: {
      namespace: 'spinnaker',
      replicas: 2,
      storage: { type: 'mysql', secretRef: { name: 'mysql', key: 'url' } },
      grpc: { exposure: { type: 'LoadBalancer', provider: 'aws', internal: true, address: 'grpc.bench.example' } },
    },
    agents: Array.from({ length: groups }, (_, g) => ({
      name: `group-${g}`,
      mode: g === 0 ? 'service' : 'infrastructure',
      accounts: Array.from({ length: Math.min(perGroup, n - g * perGroup) }, (_, i) => {
        const idx = g * perGroup + i;
        return {
          name: `account-${idx}`,
          kubeconfigSecret: { name: `kubeconfigs-${Math.floor(i / 25)}`, key: `account-${idx}` },
          ...(idx % 2 === 0 ? { namespaces: [`team-${idx % 7}`, `shared-${idx % 3}`] } : {}),
          ...(idx % 5 === 0 ? { access: 'read-only', permissions: { READ: ['viewers'] } } : {}),
          ...(idx % 5 !== 0 ? { permissions: { READ: ['dev'], WRITE: ['dev'] } } : {}),
        };
      }),
    })).filter((a) => a.accounts.length > 0),
  };
}

/**
 * Every timed phase starts from the same disk state: the output directory removed and the removal flushed. Without
 * the flush, a phase that follows an `rm -rf` of 6,000 files pays for its journal commit (and, on a filesystem
 * mounted with `discard`, its block discards), so whichever phase came right after a removal looked slower.
 */
async function fresh(path: string): Promise<void> {
  await rm(path, { recursive: true, force: true });
  execFileSync('sync');
}

const dir = await mkdtemp(join(tmpdir(), 'scale-agent-bench-compiler-'));
try {
  const file = join(dir, 'topology.yaml');
  const text = stringify(topology(accounts));
  await writeFile(file, text);
  const out = join(dir, 'out');
  const certsDir = join(dir, 'certs');
  // Unmeasured first run: JIT warm-up, and the certificates get issued once (later runs reuse them).
  const first = await synthFile(file, { out, certsDir });
  const samples: number[] = [];
  const compute: number[] = [];
  const writes: number[] = [];
  const rawWrites: number[] = [];
  let files = 0;
  let bytes = 0;
  let objects = 0;
  const pairRatios: number[] = [];
  const writePairRatios: number[] = [];
  /** End to end, as the CLI runs it; the phases' split is of that same run (synthFile times them). */
  const synthRun = async (): Promise<void> => {
    await fresh(out);
    const t0 = performance.now();
    const r = await synthFile(file, { out, certsDir });
    samples.push(performance.now() - t0);
    compute.push(r.timings.computeMs);
    writes.push(r.timings.writeMs);
    files = r.files.size;
    bytes = [...r.files.values()].reduce((a, c) => a + Buffer.byteLength(c), 0);
    objects = r.summary.places.reduce((a, p) => a + p.objects.length, 0);
  };
  /**
   * Baseline: the same files and bytes (those of the first run: synth's output does not change between runs)
   * written by a bare synchronous loop into the same, freshly emptied directory: what the disk alone costs here.
   */
  const bareLoop = async (): Promise<void> => {
    await fresh(out);
    const t0 = performance.now();
    for (const [rel, content] of first.files) {
      const p = join(out, rel);
      mkdirSync(join(p, '..'), { recursive: true });
      writeFileSync(p, content);
    }
    rawWrites.push(performance.now() - t0);
  };
  // The loop's unmeasured first run, as synth had one: both halves of every pair meet a warmed process and disk.
  await bareLoop();
  rawWrites.length = 0;
  for (let i = 0; i < runs; i++) {
    // This disk's speed wanders by 2× within a minute (the cause is not isolated; bench/profiles/compiler.md): each
    // run pairs synth with the bare loop right next to it, which of the two goes first alternating so neither always
    // follows the other, and the pair's ratio is what the run says.
    if (i % 2 === 0) {
      await synthRun();
      await bareLoop();
    } else {
      await bareLoop();
      await synthRun();
    }
    const loopMs = rawWrites.at(-1)!;
    pairRatios.push(samples.at(-1)! / loopMs);
    writePairRatios.push(writes.at(-1)! / loopMs);
    progress(
      `run ${i + 1}/${runs}: ${samples.at(-1)!.toFixed(0)} ms end to end; compute ${compute.at(-1)!.toFixed(0)} ms, ` +
        `write ${writes.at(-1)!.toFixed(0)} ms, bare write loop ${loopMs.toFixed(0)} ms, ratio ` +
        `${pairRatios.at(-1)!.toFixed(2)} (${files} files, ${objects} objects)`,
    );
  }
  const d = distribution(samples);
  const medianOfPairs = distribution(pairRatios).p50;
  emit({
    name: 'compiler',
    params: { accounts, agentGroups: first.topology.agents.length, runs, topologyBytes: Buffer.byteLength(text) },
    machine: machineInfo(),
    versions: versions(),
    figures: {
      p50Ms: d.p50,
      computeP50Ms: distribution(compute).p50,
      writeP50Ms: distribution(writes).p50,
      minMs: d.min,
      maxMs: d.max,
      meanMs: d.mean,
      files,
      outputBytes: bytes,
      objects,
      places: first.summary.places.length,
      ratioToBareWriteLoop: d.p50 / distribution(rawWrites).p50,
      ratioToBareWriteLoopMedianOfPairs: medianOfPairs,
      writeVsBareWriteLoopMedianOfPairs: distribution(writePairRatios).p50,
      pairRatiosToBareWriteLoop: pairRatios.map((r) => Math.round(r * 100) / 100),
    },
    baseline: { bareWriteLoopP50Ms: distribution(rawWrites).p50 },
    goal: { synthMs: GOAL_MS, ratioToBareWriteLoopMedianOfPairs: GOAL_RATIO },
    met: d.p50 <= GOAL_MS && medianOfPairs <= GOAL_RATIO,
    notes: [
      'p50Ms is end to end as `scale-agent synth` runs it; met: p50Ms and the median of pairs within their goals; ' +
        'certificates are reused from the first, unmeasured run',
      'computeP50Ms: read, validate, certificates and synthesis without the disk; writeP50Ms: writing the files; ' +
        'both timed inside the end-to-end runs, so they add up to them; ratioToBareWriteLoop: p50Ms over the bare loop; ' +
        'baseline.bareWriteLoopP50Ms: the same files written by a bare loop, i.e. what the disk alone costs here',
      'each run pairs synth with a bare loop next to it (which goes first alternates); pairRatiosToBareWriteLoop: ' +
        "end to end over its pair's loop, ratioToBareWriteLoopMedianOfPairs their median (the figure to judge: both " +
        'halves of a pair meet the same disk), writeVsBareWriteLoopMedianOfPairs the same for the write phase alone',
    ],
  });
} finally {
  await rm(dir, { recursive: true, force: true });
}
