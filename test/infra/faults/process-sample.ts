import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessSample {
  rssKb: number;
  /** Open file descriptors (sockets, files, pipes): a handle leak shows here first. */
  fds: number;
}

/** RSS and open descriptors of a live process, from /proc; undefined when it is gone. */
export function sampleProcess(pid: number): ProcessSample | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return {
      rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0),
      fds: readdirSync(`/proc/${pid}/fd`).length,
    };
  } catch {
    return undefined;
  }
}
