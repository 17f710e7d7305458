/**
 * Every fault the matrix injects, as data: what it does to which component or link, how long it is held, what it
 * needs from the rig, and how it is lifted. The runner (bench/faults.ts) and the CI subset (test/e2e/faults/) pick
 * from this one list.
 */
import type { Component } from '../control-plane.js';
import { apfFault, webhookFault } from './api-faults.js';
import { compactionFault } from './compaction.js';
import { diskFullFault } from './disk-full.js';
import type { FaultRig, Link } from './rig.js';
import type { Toxic, ToxicStream } from '../toxiproxy.js';

export type ProcessName = 'agent' | 'plugin-server' | Component | 'mariadb' | 'postgres';

export interface Fault {
  /** Stable id, e.g. `sigkill:agent`, `blackhole:grpc`. */
  id: string;
  fault: string;
  target: string;
  /** What the rig must have: a control plane of its own, a MariaDB of its own (on a tmpfs), the MySQL store. */
  needs: {
    privateControlPlane?: boolean;
    privateMariadb?: boolean;
    mysql?: boolean;
    postgres?: boolean;
    /** The rig's own PostgreSQL server (not SCALE_AGENT_TEST_POSTGRES_URL's): its process faults. */
    privatePostgres?: boolean;
    tmpfs?: boolean;
  };
  /** Held this long once `inject` returns (which, for some faults, waits until the fault is in force). */
  holdMs: number;
  inject(rig: FaultRig): Promise<void>;
  /**
   * At the end of the hold, before recovery: whether the fault bit (the API server refused requests, a write failed)
   * and the evidence, for faults that can fail to bite silently.
   */
  observe?(rig: FaultRig): Promise<{ bit: boolean; note: string }>;
  recover(rig: FaultRig): Promise<void>;
}

export const LINK_NAMES: Record<Link, string> = {
  grpc: 'agent ↔ plugin-server',
  apiserver: 'agent ↔ kube-apiserver',
  mysql: 'plugin-server ↔ MariaDB',
  postgres: 'plugin-server ↔ PostgreSQL',
};

/** What a fault on a link needs of the rig: the store behind it. */
const linkNeeds = (link: Link): Fault['needs'] =>
  link === 'mysql' ? { mysql: true } : link === 'postgres' ? { postgres: true } : {};

const PROCESSES: ProcessName[] = [
  'agent',
  'plugin-server',
  'kube-apiserver',
  'etcd',
  'kube-controller-manager',
  'mariadb',
  'postgres',
];

function processNeeds(p: ProcessName): Fault['needs'] {
  if (p === 'mariadb') return { mysql: true, privateMariadb: true };
  if (p === 'postgres') return { postgres: true, privatePostgres: true };
  if (p === 'agent' || p === 'plugin-server') return {};
  return { privateControlPlane: true };
}

function pidOf(rig: FaultRig, p: ProcessName): number {
  switch (p) {
    case 'agent':
      return rig.agent.proc.pid;
    case 'plugin-server':
      return rig.server.proc.pid;
    case 'mariadb':
      return rig.mariadb!.pid;
    case 'postgres':
      return rig.postgresServer!.pid;
    default:
      return rig.cp!.procs.get(p)!.pid;
  }
}

async function kill(rig: FaultRig, p: ProcessName): Promise<void> {
  switch (p) {
    case 'agent':
      return rig.agent.kill();
    case 'plugin-server':
      return rig.server.kill();
    case 'mariadb':
      return rig.mariadb!.kill();
    case 'postgres':
      return rig.postgresServer!.kill();
    default:
      return rig.cp!.kill(p);
  }
}

/** Starts the killed process again (same ports, config and data) and waits until it is ready. */
async function restart(rig: FaultRig, p: ProcessName): Promise<void> {
  switch (p) {
    case 'agent':
      // Not waiting for /readyz: catching up is part of the time to converge.
      return rig.agent.restart(false);
    case 'plugin-server':
      return rig.server.restart();
    case 'mariadb':
      return rig.mariadb!.restart();
    case 'postgres':
      return rig.postgresServer!.restart();
    default:
      return rig.cp!.startComponent(p);
  }
}

/** The whole process group: a Node CLI run through tsx has no children, but a signal to the group is exact. */
function signal(rig: FaultRig, p: ProcessName, sig: NodeJS.Signals): void {
  // PostgreSQL's backends each lead a process group of their own (PostgresServer.signal).
  if (p === 'postgres') return rig.postgresServer!.signal(sig);
  process.kill(-pidOf(rig, p), sig);
}

const processFaults: Fault[] = PROCESSES.flatMap((p) => [
  {
    id: `sigkill:${p}`,
    fault: 'SIGKILL + restart',
    target: p,
    needs: processNeeds(p),
    holdMs: 2_000,
    inject: (rig) => kill(rig, p),
    recover: (rig) => restart(rig, p),
  },
  {
    id: `sigstop:${p}`,
    fault: 'SIGSTOP … SIGCONT',
    target: p,
    needs: processNeeds(p),
    // Longer than the plugin-server's session idle timeout (5 s in the rig) and the agent's heartbeat.
    holdMs: 8_000,
    inject: async (rig) => signal(rig, p, 'SIGSTOP'),
    recover: async (rig) => signal(rig, p, 'SIGCONT'),
  },
]);

function toxicFault(
  id: string,
  fault: string,
  holdMs: number,
  toxics: { stream: ToxicStream; toxic: Toxic }[],
): (link: Link) => Fault {
  return (link) => ({
    id: `${id}:${link}`,
    fault,
    target: LINK_NAMES[link],
    needs: linkNeeds(link),
    holdMs,
    inject: async (rig) => {
      for (const [i, t] of toxics.entries()) await rig.toxiproxy.addToxic(link, `${id}-${i}`, t.stream, t.toxic);
    },
    recover: async (rig) => {
      for (const i of toxics.keys()) await rig.toxiproxy.removeToxic(link, `${id}-${i}`);
    },
  });
}

const both = (toxic: Toxic) => [
  { stream: 'upstream' as const, toxic },
  { stream: 'downstream' as const, toxic },
];

const linkFaults: ((link: Link) => Fault)[] = [
  toxicFault(
    'latency',
    'latency 300 ms ± 200 ms',
    8_000,
    both({ type: 'latency', attributes: { latency: 300, jitter: 200 } }),
  ),
  toxicFault('bandwidth', 'bandwidth 8 KB/s', 8_000, both({ type: 'bandwidth', attributes: { rate: 8 } })),
  toxicFault('reset', 'connection reset (reset_peer)', 4_000, [
    { stream: 'downstream', toxic: { type: 'reset_peer', attributes: { timeout: 0 } } },
  ]),
  toxicFault(
    'blackhole',
    'blackhole 8 s (> idle timeout)',
    8_000,
    both({ type: 'timeout', attributes: { timeout: 0 } }),
  ),
  toxicFault('slicer', 'slicer (16 B pieces)', 6_000, [
    {
      stream: 'downstream',
      toxic: { type: 'slicer', attributes: { average_size: 16, size_variation: 8, delay: 100 } },
    },
  ]),
  toxicFault('slow-close', 'slow close 5 s', 6_000, [
    { stream: 'downstream', toxic: { type: 'slow_close', attributes: { delay: 5_000 } } },
  ]),
  toxicFault('limit-data', 'cut after 4 KB (limit_data)', 6_000, [
    { stream: 'downstream', toxic: { type: 'limit_data', attributes: { bytes: 4_096 } } },
  ]),
  toxicFault('half-open', 'half-open 8 s (replies dropped)', 8_000, [
    { stream: 'downstream', toxic: { type: 'timeout', attributes: { timeout: 0 } } },
  ]),
  (link) => ({
    id: `down:${link}`,
    fault: 'link down (refused) 4 s',
    target: LINK_NAMES[link],
    needs: linkNeeds(link),
    holdMs: 4_000,
    inject: (rig) => rig.toxiproxy.setEnabled(link, false),
    recover: (rig) => rig.toxiproxy.setEnabled(link, true),
  }),
];

export const LINKS: Link[] = ['grpc', 'apiserver', 'mysql', 'postgres'];

export const FAULTS: Fault[] = [
  ...processFaults,
  ...LINKS.flatMap((link) => linkFaults.map((f) => f(link))),
  apfFault(),
  webhookFault(),
  diskFullFault(),
  compactionFault(),
];

export function faultById(id: string): Fault {
  const f = FAULTS.find((x) => x.id === id);
  if (!f) throw new Error(`no fault ${id}; known: ${FAULTS.map((x) => x.id).join(', ')}`);
  return f;
}
