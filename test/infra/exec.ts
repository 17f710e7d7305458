import { spawn } from 'node:child_process';

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  input?: string;
  env?: Record<string, string | undefined>;
  cwd?: string;
  /** Resolve with the result instead of throwing when the exit code is not 0. */
  allowFail?: boolean;
  timeoutMs?: number;
}

/** Runs a program to completion and collects its output; the error on failure carries both streams. */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: { ...process.env, ...opts.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.on('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`${cmd}: ${e.message}`, { cause: e }));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const result = { code: code ?? (signal ? 128 : 1), stdout, stderr };
      if (result.code !== 0 && !opts.allowFail) {
        const shown = [cmd, ...args].join(' ');
        reject(
          new Error(`command failed (exit ${result.code}${signal ? `, ${signal}` : ''}): ${shown}\n${stderr}${stdout}`),
        );
      } else {
        resolve(result);
      }
    });
    // A child that exits (or never reads stdin) before taking its input makes the write fail with EPIPE; the
    // exit code and output already say what happened, so the stdin error must not surface as an unhandled one.
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}
