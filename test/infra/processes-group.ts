import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A long-running server process (etcd, kube-apiserver, mariadbd, ...) started in its own process group, with
 * its output in a log file. Stopping kills the whole group and waits until the process is really gone, so
 * a test run leaves nothing behind.
 */
export class ServerProcess {
  private exited = false;
  private exitCode: number | null = null;
  private spawnError: Error | undefined;

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly logFile: string,
  ) {
    child.on('exit', (code) => {
      this.exited = true;
      this.exitCode = code;
    });
    // A spawn failure (missing binary, EACCES) arrives as 'error' and, with no listener, would crash the test
    // process; record it as an exit so assertRunning() reports it with the log.
    child.on('error', (e) => {
      this.exited = true;
      this.spawnError = e;
    });
    liveProcesses.add(this);
  }

  static start(name: string, cmd: string, args: string[], logFile: string, env?: NodeJS.ProcessEnv): ServerProcess {
    const log = createWriteStream(logFile, { flags: 'a' });
    // A log file that cannot be written must not take the test process down; the process keeps running.
    log.on('error', () => {});
    const child = spawn(cmd, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env: env ?? process.env });
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    return new ServerProcess(name, child, logFile);
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return !this.exited;
  }

  /** Throws with the tail of the log when the process has died, e.g. while waiting for readiness. */
  assertRunning(): void {
    if (this.exited) {
      const why = this.spawnError ? `could not start: ${this.spawnError.message}` : `exited with code ${this.exitCode}`;
      throw new Error(`${this.name} ${why}; last log lines:\n${this.logTail()}`);
    }
  }

  logTail(lines = 40): string {
    try {
      return readFileSync(this.logFile, 'utf8').split('\n').slice(-lines).join('\n');
    } catch {
      return '(no log)';
    }
  }

  async stop(graceMs = 5_000): Promise<void> {
    if (!this.exited) {
      signalGroup(this.pid, 'SIGTERM');
      const deadline = Date.now() + graceMs;
      while (!this.exited && Date.now() < deadline) await sleep(50);
      if (!this.exited) {
        signalGroup(this.pid, 'SIGKILL');
        while (!this.exited) await sleep(20);
      }
    }
    // Children of the leader (if any) die with the group; make sure none outlived it.
    signalGroup(this.pid, 'SIGKILL');
    liveProcesses.delete(this);
  }

  /** SIGKILL, no grace: for fault-injection tests. */
  async kill(): Promise<void> {
    signalGroup(this.pid, 'SIGKILL');
    while (!this.exited) await sleep(20);
    liveProcesses.delete(this);
  }
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  if (pid <= 0) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // already gone
  }
}

const liveProcesses = new Set<ServerProcess>();

// Last resort when a test process dies without running teardown: kill every group we started.
process.once('exit', () => {
  for (const p of liveProcesses) signalGroup(p.pid, 'SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(sig, () => {
    for (const p of liveProcesses) signalGroup(p.pid, 'SIGKILL');
    // Exit only if nobody else handles the signal (k8s-up and vitest have their own shutdown).
    if (process.listenerCount(sig) === 0) process.exit(130);
  });
}

/** True while a process with this pid exists (and is not a zombie we could still reap). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}
