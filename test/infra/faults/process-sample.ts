import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessSample {
  rssKb: number;
  /**
   * RSS = anonymous + file-backed (+ shared memory). Anonymous is what the process allocated (V8's pages, malloc);
   * file-backed is the binary's and libraries' pages touched so far, which grows as new code paths run, not a leak.
   */
  rssAnonKb: number;
  rssFileKb: number;
  /** Open file descriptors (sockets, files, pipes): a handle leak shows here first. */
  fds: number;
  /** CPU time used so far (user + system): what a memory setting costs shows here. */
  cpuSeconds: number;
  /** V8's view, for a Node process whose /metrics carries prom-client's default metrics (see sampleHeap). */
  heap?: HeapSample;
}

/**
 * What V8 holds, to tell a leak (heap used or external memory climbing) from an allocator or a young generation
 * that keeps pages it no longer uses (RSS climbing with both flat).
 */
export interface HeapSample {
  /** Live JS objects (after the last collection) and the pages V8 has committed for all spaces. */
  usedKb: number;
  totalKb: number;
  /** The young generation: V8 grows its semi-spaces under allocation pressure and keeps them. */
  newSpaceTotalKb: number;
  oldSpaceUsedKb: number;
  /** Memory outside the JS heap that JS objects hold (Buffers, ArrayBuffers): a native leak shows here. */
  externalKb: number;
}

/** USER_HZ: what /proc/<pid>/stat counts CPU time in; 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** RSS, open descriptors and CPU time of a live process, from /proc; undefined when it is gone. */
export function sampleProcess(pid: number): ProcessSample | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    // After the command name in parentheses (which may hold spaces): state is field 3, utime and stime 14 and 15.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return {
      rssKb: Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0),
      rssAnonKb: Number(/RssAnon:\s+(\d+)/.exec(status)?.[1] ?? 0),
      rssFileKb: Number(/RssFile:\s+(\d+)/.exec(status)?.[1] ?? 0),
      fds: readdirSync(`/proc/${pid}/fd`).length,
      cpuSeconds: (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND,
    };
  } catch {
    return undefined;
  }
}

/**
 * Heap figures from a process's Prometheus text (prom-client's default metrics under `prefix`, e.g.
 * `scale_agent_agent_`); undefined when the endpoint does not answer or carries none.
 */
export async function sampleHeap(metricsUrl: string, prefix: string): Promise<HeapSample | undefined> {
  const text = await fetch(metricsUrl, { signal: AbortSignal.timeout(5_000) })
    .then((r) => (r.ok ? r.text() : ''))
    .catch(() => '');
  return parseHeapSample(text, prefix);
}

export function parseHeapSample(text: string, prefix: string): HeapSample | undefined {
  const kb = (sample: string): number | undefined => {
    const line = text.split('\n').find((l) => l.startsWith(`${prefix}${sample} `));
    return line === undefined ? undefined : Math.round(Number(line.slice(prefix.length + sample.length + 1)) / 1024);
  };
  const usedKb = kb('nodejs_heap_size_used_bytes');
  if (usedKb === undefined) return undefined;
  return {
    usedKb,
    totalKb: kb('nodejs_heap_size_total_bytes') ?? 0,
    newSpaceTotalKb: kb('nodejs_heap_space_size_total_bytes{space="new"}') ?? 0,
    oldSpaceUsedKb: kb('nodejs_heap_space_size_used_bytes{space="old"}') ?? 0,
    externalKb: kb('nodejs_external_memory_bytes') ?? 0,
  };
}
