/**
 * What the real node needs from this machine, checked before anything is changed, so a runner that cannot host it
 * gets one message saying what is missing instead of a kubelet log full of EPERM.
 */
import { accessSync, constants, existsSync, readFileSync } from 'node:fs';
import { run } from '../exec.js';
import { BRIDGE, NET, NODE_IP, NODE_IP_LINK, SERVICE_CIDR } from './layout.js';

const CAP_NET_ADMIN = 12;
const CAP_SYS_ADMIN = 21;

export async function preflight(): Promise<void> {
  const missing: string[] = [];
  if (process.getuid?.() !== 0) missing.push(`root (running as uid ${process.getuid?.()})`);
  const capEff = BigInt(`0x${/CapEff:\s*([0-9a-f]+)/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? '0'}`);
  for (const [bit, name] of [
    [CAP_SYS_ADMIN, 'CAP_SYS_ADMIN (mounts, namespaces, cgroups)'],
    [CAP_NET_ADMIN, 'CAP_NET_ADMIN (links, routes, iptables)'],
  ] as const) {
    if (!(capEff & (1n << BigInt(bit)))) missing.push(name);
  }
  try {
    accessSync('/proc/sys/net/ipv4/ip_forward', constants.W_OK);
  } catch {
    missing.push('a writable /proc/sys (sysctls; read-only in unprivileged containers)');
  }
  if (!existsSync('/sys/fs/cgroup/memory') && !existsSync('/sys/fs/cgroup/cgroup.controllers')) {
    missing.push('a cgroup hierarchy mounted at /sys/fs/cgroup');
  }
  if (!/\toverlay$/m.test(readFileSync('/proc/filesystems', 'utf8'))) missing.push('the overlay filesystem');
  for (const tool of ['runc', 'iptables', 'ip6tables', 'ip', 'umount']) {
    if ((await run('sh', ['-c', `command -v ${tool}`], { allowFail: true })).code !== 0) {
      missing.push(`${tool} on PATH (runc and iptables: bash scripts/test-deps.sh)`);
    }
  }
  if (missing.length) {
    throw new Error(
      'the real-node tests run a kubelet, containerd and pods on this machine and need root with ' +
        'CAP_SYS_ADMIN and CAP_NET_ADMIN (a VM or bare-metal runner, not an unprivileged container); missing: ' +
        missing.join('; '),
    );
  }
  const used = (await run('ip', ['-4', 'route', 'show', 'table', 'all'])).stdout
    .split('\n')
    .filter((l) => l.includes('10.250.'));
  if (used.length) {
    const ours = used.some((l) => l.includes(NODE_IP) || l.includes(BRIDGE) || l.includes(SERVICE_CIDR));
    throw new Error(
      `the real node uses ${NET}, which this machine already routes: ${used.join('; ')}` +
        (ours
          ? ` (left by a real node whose run was killed: ip addr del ${NODE_IP}/32 dev ${NODE_IP_LINK}; ip link del ${BRIDGE}; ` +
            `ip route del ${SERVICE_CIDR} dev ${NODE_IP_LINK})`
          : ''),
    );
  }
}
