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

/** CPU time (user+system, ms) and RSS of a process from /proc, for the server-side cost of a benchmark. */
export async function procStats(pid: number): Promise<{ cpuMs: number; rssBytes: number }> {
  const { readFile } = await import('node:fs/promises');
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
  const ticks = Number(stat[11]) + Number(stat[12]); // utime + stime, fields 14 and 15 of the full line
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return { cpuMs: (ticks * 1000) / 100, rssBytes: rssKb * 1024 };
}
