/**
 * What a node changes on this machine, captured before it starts and compared after it stops: sysctls (kubelet
 * sets vm.overcommit_memory, kernel.panic and kernel.panic_on_oops; the bridge plugin net.ipv4.ip_forward), the
 * iptables rules of both families (kubelet's and kube-proxy's KUBE-* chains), mounts (kubelet bind-mounts its
 * root directory, containerd its snapshots and network namespaces), links (bridge, veths) and addresses (the node's),
 * routes, cgroups (kubelet's /kubepods in every hierarchy) and the fixed paths of layout.ts.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../exec.js';
import { FIXED_PATHS } from './layout.js';

export interface HostState {
  sysctls: Record<string, string>;
  iptables: { v4: string[]; v6: string[] };
  mounts: string[];
  links: string[];
  addresses: string[];
  routes: string[];
  cgroups: string[];
  paths: string[];
}

/** Sysctl directories read whole (only their own files, not subdirectories), and values the kernel changes itself. */
const SYSCTL_DIRS = [
  'net/ipv4',
  'net/ipv4/conf/all',
  'net/ipv4/conf/default',
  'net/ipv6/conf/all',
  'net/ipv6/conf/default',
  'net/bridge',
  'net/netfilter',
  'vm',
  'kernel',
  'kernel/keys',
];
const VOLATILE_SYSCTLS = new Set([
  'kernel/ns_last_pid',
  'kernel/tainted',
  'kernel/perf_event_max_sample_rate',
  'net/netfilter/nf_conntrack_count',
  'vm/stat_refresh',
]);

export function readSysctls(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const dir of SYSCTL_DIRS) {
    const abs = join('/proc/sys', dir);
    if (!existsSync(abs)) continue;
    for (const name of readdirSync(abs)) {
      const key = `${dir}/${name}`;
      if (VOLATILE_SYSCTLS.has(key)) continue;
      try {
        if (!statSync(join(abs, name)).isFile()) continue;
        out[key] = readFileSync(join(abs, name), 'utf8').trim();
      } catch {
        // write-only (vm/drop_caches) or not readable here
      }
    }
  }
  return out;
}

/**
 * iptables-save without counters, comments and empty built-in chains: iptables-nft cannot delete a table once a
 * program made one, and a built-in chain with policy ACCEPT and no rule filters nothing.
 */
export function normalizeIptables(save: string): string[] {
  const lines = save.split('\n').filter((l) => l && !l.startsWith('#') && l !== 'COMMIT');
  const out: string[] = [];
  let table = '';
  for (const line of lines) {
    if (line.startsWith('*')) {
      table = line.slice(1);
      continue;
    }
    const chain = /^:(\S+) (\S+)/.exec(line);
    if (chain) {
      const builtin = chain[2] !== '-';
      if (!builtin || chain[2] !== 'ACCEPT') out.push(`${table} :${chain[1]} ${chain[2]}`);
      continue;
    }
    out.push(`${table} ${line}`);
  }
  return out;
}

async function iptablesSave(cmd: 'iptables-save' | 'ip6tables-save'): Promise<string> {
  return (await run(cmd, [])).stdout;
}

export async function snapshotHost(): Promise<HostState> {
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const f = l.split(' ');
      const fsType = f[f.indexOf('-') + 1];
      return `${f[4]} ${fsType}`;
    })
    // Only where the node mounts (its own directory, the fixed paths): on a shared machine other programs (an image
    // build's overlay mounts) mount and unmount meanwhile.
    .filter((m) => {
      const path = m.split(' ')[0] ?? '';
      return path.includes('/scale-agent-node-') || FIXED_PATHS.some((p) => path === p || path.startsWith(`${p}/`));
    });
  const routes = [
    ...(await run('ip', ['-4', 'route', 'show', 'table', 'all'])).stdout.split('\n'),
    ...(await run('ip', ['-6', 'route', 'show', 'table', 'all'])).stdout.split('\n'),
  ].filter(Boolean);
  const cgroups: string[] = [];
  for (const h of readdirSync('/sys/fs/cgroup')) {
    const abs = join('/sys/fs/cgroup', h);
    try {
      for (const e of readdirSync(abs, { withFileTypes: true })) if (e.isDirectory()) cgroups.push(`${h}/${e.name}`);
    } catch {
      // not a hierarchy
    }
  }
  return {
    sysctls: readSysctls(),
    iptables: {
      v4: normalizeIptables(await iptablesSave('iptables-save')),
      v6: normalizeIptables(await iptablesSave('ip6tables-save')),
    },
    mounts: [...new Set(mounts)].sort(),
    links: readdirSync('/sys/class/net').sort(),
    addresses: (await run('ip', ['-o', 'addr', 'show'])).stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(/\s+/).slice(1, 4).join(' '))
      .sort(),
    routes: routes.sort(),
    cgroups: cgroups.sort(),
    paths: [...FIXED_PATHS.filter((p) => existsSync(p)), ...netnsEntries()].sort(),
  };
}

function netnsEntries(): string[] {
  try {
    return readdirSync('/run/netns').map((n) => `/run/netns/${n}`);
  } catch {
    return [];
  }
}

/** Human-readable differences, `+` for what appeared and `-` for what went away; empty when the states are equal. */
export function diffHost(before: HostState, after: HostState): string[] {
  const out: string[] = [];
  const keys = new Set([...Object.keys(before.sysctls), ...Object.keys(after.sysctls)]);
  for (const k of [...keys].sort()) {
    if (before.sysctls[k] !== after.sysctls[k]) {
      out.push(`sysctl ${k}: ${before.sysctls[k] ?? '(absent)'} -> ${after.sysctls[k] ?? '(absent)'}`);
    }
  }
  const lists: [string, string[], string[]][] = [
    ['iptables', before.iptables.v4, after.iptables.v4],
    ['ip6tables', before.iptables.v6, after.iptables.v6],
    ['mount', before.mounts, after.mounts],
    ['link', before.links, after.links],
    ['address', before.addresses, after.addresses],
    ['route', before.routes, after.routes],
    ['cgroup', before.cgroups, after.cgroups],
    ['path', before.paths, after.paths],
  ];
  for (const [what, b, a] of lists) {
    const was = new Set(b);
    const is = new Set(a);
    for (const x of a) if (!was.has(x)) out.push(`${what} + ${x}`);
    for (const x of b) if (!is.has(x)) out.push(`${what} - ${x}`);
  }
  return out;
}
