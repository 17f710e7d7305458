import { join } from 'node:path';
import { versionInfo } from '../shared/version.js';
import { ensureTopologyCerts } from './certs.js';
import { ensureTopologySecrets } from './generated-secrets.js';
import { synthesize, type SynthResult } from './synth.js';
import type { Topology } from './topology.js';
import { loadTopology } from './validate.js';
import { assertOutputDirectory, writeOutput } from './write.js';

export interface SynthFileOptions {
  out: string;
  /** Where generated certificates and secrets live (and are reused from). @default <out>/certs */
  certsDir?: string;
  overlayDepth?: number;
}

export interface SynthFileResult extends SynthResult {
  topology: Topology;
  written: string[];
  removed: string[];
  certsWritten: string[];
  certsDir?: string;
  /** Where the time went: everything before the disk (read, validate, certificates, synthesis) and the writing. */
  timings: { computeMs: number; writeMs: number };
}

/** validate → certificates → synthesize → write: what `scale-agent synth` does. */
export async function synthFile(file: string, options: SynthFileOptions): Promise<SynthFileResult> {
  const t0 = performance.now();
  const { topology } = await loadTopology(file);
  const certsDir = options.certsDir ?? join(options.out, 'certs');
  await assertOutputDirectory(options.out, '--out');
  if (options.certsDir !== undefined) await assertOutputDirectory(options.certsDir, '--certs-dir');
  const certs = await ensureTopologyCerts(topology, certsDir);
  const generated = await ensureTopologySecrets(topology, certsDir);
  const result = synthesize(topology, {
    ...(certs ? { tls: certs.material } : {}),
    secrets: generated.secrets,
    ...(options.overlayDepth !== undefined ? { overlayDepth: options.overlayDepth } : {}),
    version: versionInfo().version,
  });
  const t1 = performance.now();
  const { written, removed } = await writeOutput(options.out, result.files);
  const t2 = performance.now();
  return {
    ...result,
    topology,
    written,
    removed,
    certsWritten: [...(certs?.set.written ?? []), ...generated.written],
    ...(certs || Object.keys(generated.secrets).length > 0 ? { certsDir } : {}),
    timings: { computeMs: t1 - t0, writeMs: t2 - t1 },
  };
}
