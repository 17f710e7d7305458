/**
 * Puts this machine back the way host-state.ts saw it before the node started. Each step is best effort and
 * reports what it could not undo, so one stuck mount does not leave the iptables rules behind as well.
 */
import { readdirSync, readFileSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../exec.js';
import { readSysctls, type HostState } from './host-state.js';
import { BRIDGE, EGRESS_CHAIN, FIXED_PATHS, NODE_IP, NODE_IP_LINK, SERVICE_CIDR } from './layout.js';

/** Chains the node's programs create: kubelet and kube-proxy (KUBE-), CNI plugins (CNI-), this harness. */
const OUR_CHAIN = new RegExp(`^(KUBE-|CNI-|${EGRESS_CHAIN}$)`);

/** Kills every process left in the node's cgroups (containers whose shim is gone, a pod kubelet never stopped). */
export function killCgroupProcesses(before: HostState): number {
  let killed = 0;
  for (const cg of newCgroups(before)) {
    for (const dir of walk(join('/sys/fs/cgroup', cg))) {
      let procs: string[];
      try {
        procs = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
      } catch {
        continue;
      }
      for (const pid of procs) {
        try {
          process.kill(Number(pid), 'SIGKILL');
          killed++;
        } catch {
          // gone
        }
      }
    }
  }
  return killed;
}

/** Kills processes whose executable is one of `exes` (containerd's shims outlive containerd by design). */
export function killByExecutable(exes: string[]): number {
  let killed = 0;
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let exe: string;
    try {
      exe = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0] ?? '';
    } catch {
      continue;
    }
    if (exes.includes(exe)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
        killed++;
      } catch {
        // gone
      }
    }
  }
  return killed;
}

export async function undoHost(before: HostState, nodeDir: string): Promise<string[]> {
  const problems: string[] = [];
  const step = async (what: string, fn: () => Promise<void> | void) => {
    try {
      await fn();
    } catch (e) {
      problems.push(`${what}: ${(e as Error).message}`);
    }
  };
  await step('unmount', () => unmountNew(before, nodeDir));
  await step('links', () => deleteLinks(before));
  await step('route', async () => {
    await run('ip', ['route', 'del', SERVICE_CIDR, 'dev', NODE_IP_LINK], { allowFail: true });
    await run('ip', ['addr', 'del', `${NODE_IP}/32`, 'dev', NODE_IP_LINK], { allowFail: true });
  });
  await step('iptables', () => removeChains('iptables', before.iptables.v4));
  await step('ip6tables', () => removeChains('ip6tables', before.iptables.v6));
  await step('sysctls', () => restoreSysctls(before.sysctls));
  await step('cgroups', () => removeCgroups(before));
  await step('paths', () => removePaths(before));
  return problems;
}

function restoreSysctls(saved: Record<string, string>): void {
  const now = readSysctls();
  const failed: string[] = [];
  for (const [key, value] of Object.entries(saved)) {
    if (now[key] === undefined || now[key] === value) continue;
    try {
      writeFileSync(join('/proc/sys', key), value);
    } catch (e) {
      failed.push(`${key}=${value} (${(e as Error).message})`);
    }
  }
  if (failed.length) throw new Error(`could not restore ${failed.join(', ')}`);
}

/** Mounts under the node's directory or the fixed paths that were not there before, deepest first. */
async function unmountNew(before: HostState, nodeDir: string): Promise<void> {
  const was = new Set(before.mounts.map((m) => m.split(' ')[0]));
  const roots = [nodeDir, ...FIXED_PATHS];
  // A path can be mounted several times over (kubelet's bind mount of its root): repeat until none is left.
  for (let round = 0; round < 5; round++) {
    const points = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(' ')[4] ?? '')
      .filter((p) => !was.has(p) && roots.some((r) => p === r || p.startsWith(`${r}/`)))
      .sort((a, b) => b.length - a.length);
    if (!points.length) return;
    for (const p of points) await run('umount', ['-l', p], { allowFail: true });
  }
  throw new Error('mounts left after 5 rounds of umount');
}

async function deleteLinks(before: HostState): Promise<void> {
  const was = new Set(before.links);
  for (const link of readdirSync('/sys/class/net')) {
    if (was.has(link)) continue;
    if (link === BRIDGE || link.startsWith('veth')) {
      await run('ip', ['link', 'del', link], { allowFail: true });
    }
  }
}

/**
 * Deletes the node's chains that were not there before, and every new rule that jumps to one of them, with one
 * iptables-restore --noflush per family (rules of other programs stay).
 */
async function removeChains(cmd: 'iptables' | 'ip6tables', before: string[]): Promise<void> {
  const was = new Set(before);
  const now = (await run(`${cmd}-save`, [])).stdout;
  const byTable = new Map<string, { rules: string[]; chains: string[] }>();
  let table = '';
  for (const line of now.split('\n')) {
    if (line.startsWith('*')) {
      table = line.slice(1);
      byTable.set(table, { rules: [], chains: [] });
      continue;
    }
    const t = byTable.get(table);
    if (!t) continue;
    const chain = /^:(\S+) -/.exec(line);
    if (chain?.[1] && OUR_CHAIN.test(chain[1]) && !was.has(`${table} :${chain[1]} -`)) t.chains.push(chain[1]);
    const rule = /^-A (\S+) (.*)$/.exec(line);
    if (rule && !was.has(`${table} ${line}`)) {
      const target = /-[jg] (\S+)/.exec(rule[2] ?? '')?.[1] ?? '';
      // Rules inside a chain that goes away are flushed with it.
      if (t.chains.includes(rule[1] ?? '')) continue;
      if (OUR_CHAIN.test(rule[1] ?? '') || OUR_CHAIN.test(target)) t.rules.push(`-D ${rule[1]} ${rule[2]}`);
    }
  }
  const script: string[] = [];
  for (const [name, t] of byTable) {
    if (!t.rules.length && !t.chains.length) continue;
    script.push(`*${name}`, ...t.rules, ...t.chains.map((c) => `-F ${c}`), ...t.chains.map((c) => `-X ${c}`), 'COMMIT');
  }
  if (script.length) await run(`${cmd}-restore`, ['--noflush'], { input: script.join('\n') + '\n' });
}

function newCgroups(before: HostState): string[] {
  const was = new Set(before.cgroups);
  const out: string[] = [];
  for (const h of readdirSync('/sys/fs/cgroup')) {
    try {
      for (const e of readdirSync(join('/sys/fs/cgroup', h), { withFileTypes: true })) {
        if (e.isDirectory() && !was.has(`${h}/${e.name}`) && e.name.startsWith('kubepods')) out.push(`${h}/${e.name}`);
      }
    } catch {
      // not a hierarchy
    }
  }
  return out;
}

/** Every directory under `dir`, children before parents (the order rmdir needs). */
function walk(dir: string): string[] {
  const out: string[] = [];
  try {
    for (const e of readdirSync(dir, { withFileTypes: true }))
      if (e.isDirectory()) out.push(...walk(join(dir, e.name)));
  } catch {
    return out;
  }
  out.push(dir);
  return out;
}

function removeCgroups(before: HostState): void {
  const left: string[] = [];
  for (const cg of newCgroups(before)) {
    for (const dir of walk(join('/sys/fs/cgroup', cg))) {
      try {
        rmdirSync(dir);
      } catch (e) {
        left.push(`${dir} (${(e as NodeJS.ErrnoException).code})`);
      }
    }
  }
  if (left.length) throw new Error(`could not remove ${left.slice(0, 5).join(', ')}`);
}

function removePaths(before: HostState): void {
  const was = new Set(before.paths);
  for (const p of FIXED_PATHS) if (!was.has(p)) rmSync(p, { recursive: true, force: true });
  try {
    for (const n of readdirSync('/run/netns')) {
      if (!was.has(`/run/netns/${n}`)) rmSync(`/run/netns/${n}`, { force: true });
    }
  } catch {
    // no /run/netns
  }
}
