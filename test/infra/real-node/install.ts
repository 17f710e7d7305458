/**
 * What an install test on the real node does as a user would: read synth's summary.json, mint an account's
 * kubeconfig with `scale-agent kubeconfig` and apply its Secret with the command it prints, wait for Deployments
 * (saying what a person would look at when they are not Available), and read the pods' states.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '../exec.js';
import { cliCommand } from '../processes.js';
import type { RealNode } from './node.js';

export interface Place {
  name: string;
  kind: string;
  kustomize: string;
  namespace: string;
  apply: string[];
  requires: string[];
}

export interface Summary {
  places: Place[];
  accounts: { name: string; agent: string; mode: string; rbacPlace: string }[];
}

export function readSummary(out: string): Summary {
  return JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as Summary;
}

/**
 * `scale-agent kubeconfig TOPOLOGY --account NAME`, as the summary tells the operator: the account's ServiceAccount
 * and RBAC applied to the node's cluster with its admin kubeconfig, a TokenRequest token, and the kubeconfig's Secret
 * applied with the printed server-side command. `server` is the API server as the agent pods reach it.
 */
export async function mintAccountKubeconfig(
  node: RealNode,
  opts: { topology: string; account: string; dir: string; server: string },
): Promise<string> {
  const out = join(opts.dir, `${opts.account}.kubeconfig`);
  const cli = cliCommand([
    'kubeconfig',
    opts.topology,
    '--account',
    opts.account,
    '--kubeconfig',
    node.kubeconfig,
    '--server',
    opts.server,
    '--duration',
    '1h',
    '--out',
    out,
    '--json',
  ]);
  const r = await run(cli.cmd, cli.args, { timeoutMs: 120_000 });
  const result = JSON.parse(r.stdout) as { secret: { file: string; apply: string } };
  // The printed command is `kubectl apply --server-side --field-manager=... -f FILE`: run with the node's kubectl.
  const words = result.secret.apply.split(/\s+/);
  if (words[0] !== 'kubectl')
    throw new Error(`scale-agent kubeconfig printed an unexpected command: ${result.secret.apply}`);
  await node.kubectl(words.slice(1));
  return readFileSync(out, 'utf8');
}

/** Waits for every Deployment of the namespaces to be Available; the error carries pods, events and log tails. */
export async function waitAvailable(node: RealNode, namespaces: string[], timeoutS = 150): Promise<void> {
  for (const ns of namespaces) {
    const waited = await node.kubectl(
      ['-n', ns, 'wait', '--for=condition=Available', 'deployment', '--all', `--timeout=${timeoutS}s`],
      { timeoutMs: (timeoutS + 10) * 1000, allowFail: true },
    );
    if (waited.code === 0) continue;
    const what = await node.kubectl(['-n', ns, 'get', 'pods,events', '-o', 'wide'], { allowFail: true });
    const logs = await node.kubectl(
      ['-n', ns, 'logs', '--all-containers', '--prefix', '--tail=15', '-l', 'app.kubernetes.io/name'],
      {
        allowFail: true,
      },
    );
    throw new Error(
      `deployments of ${ns} not Available:\n${waited.stderr}\n${what.stdout}\n${logs.stdout}${logs.stderr}`,
    );
  }
}

/** Waits for each Deployment's rollout (after an apply that changed a pod template) to finish. */
export async function waitRolledOut(node: RealNode, namespaces: string[], timeoutS = 150): Promise<void> {
  for (const ns of namespaces) {
    const names = (await node.kubectl(['-n', ns, 'get', 'deployments', '-o', 'name'])).stdout
      .split('\n')
      .filter(Boolean);
    for (const d of names) {
      await node.kubectl(['-n', ns, 'rollout', 'status', d, `--timeout=${timeoutS}s`], {
        timeoutMs: (timeoutS + 10) * 1000,
      });
    }
  }
}

export interface PodState {
  pod: string;
  phase: string;
  ip: string;
  labels: Record<string, string>;
  containers: { name: string; ready: boolean; restarts: number }[];
}

/** The pods of a namespace (optionally by label selector), the fields a test asserts on. */
export async function podStates(node: RealNode, namespace: string, selector?: string): Promise<PodState[]> {
  const args = ['-n', namespace, 'get', 'pods', '-o', 'json', ...(selector ? ['-l', selector] : [])];
  const pods = (
    JSON.parse((await node.kubectl(args)).stdout) as {
      items: {
        metadata: { name: string; labels?: Record<string, string>; deletionTimestamp?: string };
        status: {
          phase: string;
          podIP?: string;
          containerStatuses?: { name: string; ready: boolean; restartCount: number }[];
        };
      }[];
    }
  ).items;
  return pods
    .filter((p) => !p.metadata.deletionTimestamp)
    .map((p) => ({
      pod: p.metadata.name,
      phase: p.status.phase,
      ip: p.status.podIP ?? '',
      labels: p.metadata.labels ?? {},
      containers: (p.status.containerStatuses ?? []).map((c) => ({
        name: c.name,
        ready: c.ready,
        restarts: c.restartCount,
      })),
    }));
}

/** A Service's ClusterIP: this machine reaches it through kube-proxy's rules, as a pod does. */
export async function clusterIp(node: RealNode, namespace: string, service: string): Promise<string> {
  return (
    await node.kubectl(['-n', namespace, 'get', 'service', service, '-o', 'jsonpath={.spec.clusterIP}'])
  ).stdout.trim();
}
