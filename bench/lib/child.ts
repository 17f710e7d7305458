import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** Starts `node --import tsx <script>` and resolves with the first stdout line (its address) and the child. */
export async function startScript(script: string, args: string[] = []): Promise<{ line: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const rl = createInterface({ input: child.stdout! });
  const line = await new Promise<string>((resolve, reject) => {
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before printing its address`)));
  });
  return { line, child };
}

/**
 * CPU time (user+system, ms), RSS and minor page faults of a process from /proc, for the server-side cost of a
 * benchmark. Minor faults count the pages the process touched for the first time (a growing cache touches new ones
 * for as long as it grows); on a virtual machine each can cost far more than on bare metal (docs/benchmarks.md).
 */
export async function procStats(
  pid: number,
): Promise<{ cpuMs: number; systemMs: number; rssBytes: number; minorFaults: number }> {
  const { readFile } = await import('node:fs/promises');
  // Fields from the state on (the full line's 3rd): minflt is the 10th of the full line, utime and stime the 14th, 15th.
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]);
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return {
    cpuMs: (ticks * 1000) / 100,
    systemMs: (Number(stat[12]) * 1000) / 100,
    rssBytes: rssKb * 1024,
    minorFaults: Number(stat[7]),
  };
}
