/**
 * What an install test on the real node does as a user would: read synth's summary.json, mint an account's
 * kubeconfig with `scale-agent kubeconfig` and apply its Secret with the command it prints, install a place with
 * the summary's helm command, wait for Deployments (saying what a person would look at when they are not
 * Available), read the pods' states, and post an Orca-shaped deploy to the REST API and wait for its task.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { run } from '../exec.js';
import { resolveK8sBinDir } from '../k8s-tools.js';
import { cliCommand } from '../processes.js';
import { waitFor } from '../wait.js';
import { RealNode } from './node.js';

const CHART = fileURLToPath(new URL('../../../charts/scale-agent', import.meta.url));

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

/** A fresh node with `images` imported into the kubelet's containerd namespace (no registry to pull them from). */
export async function startNodeWithImages(images: { archive: string }[]): Promise<RealNode> {
  const node = await RealNode.start({ log: (l) => console.error(`[real-node] ${l}`) });
  for (const image of images) {
    await node.ctr(['--namespace', 'k8s.io', 'images', 'import', image.archive], { timeoutMs: 300_000 });
  }
  return node;
}

/**
 * The one change the install tests make to an example: a one-node cluster has no load balancer, so the gRPC
 * exposure is External at the gRPC Service's cluster DNS name (the agents of modes infrastructure and agent dial
 * the Service; an operator's proxy in front of it would be that address).
 */
export function exposeGrpcAtServiceName(t: { pluginServer: { namespace: string; grpc: { exposure: unknown } } }): void {
  const address = `scale-agent-plugin-server-grpc.${t.pluginServer.namespace}.svc.cluster.local:9091`;
  t.pluginServer.grpc.exposure = { type: 'External', address };
}

/**
 * `scale-agent kubeconfig TOPOLOGY --account NAME`, as the summary tells the operator: the account's ServiceAccount
 * and RBAC applied to the node's cluster with its admin kubeconfig, a TokenRequest token, and the kubeconfig's Secret
 * applied with the printed server-side command. `server` is the API server as the agent pods reach it.
 */
export async function mintAccountKubeconfig(
  node: RealNode,
  opts: { topology: string; account: string; dir: string; server: string; applySecret?: boolean },
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
  if (opts.applySecret === false) return readFileSync(out, 'utf8');
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

/** A generic Secret of string values, as the summary's `requires` asks the operator to provide one. */
export async function createSecret(
  node: RealNode,
  namespace: string,
  name: string,
  data: Record<string, string>,
): Promise<void> {
  await node.kubectl([
    '-n',
    namespace,
    'create',
    'secret',
    'generic',
    name,
    ...Object.entries(data).map(([k, v]) => `--from-literal=${k}=${v}`),
  ]);
}

/** A Service's ClusterIP: this machine reaches it through kube-proxy's rules, as a pod does. */
export async function clusterIp(node: RealNode, namespace: string, service: string): Promise<string> {
  return (
    await node.kubectl(['-n', namespace, 'get', 'service', service, '-o', 'jsonpath={.spec.clusterIP}'])
  ).stdout.trim();
}

/** Helm's environment for a test: the node's cluster, and caches inside the test's directory. */
export function helmEnv(node: RealNode, dir: string): Record<string, string> {
  return { KUBECONFIG: node.kubeconfig, HELM_CACHE_HOME: join(dir, '.helm'), HELM_CONFIG_HOME: join(dir, '.helm') };
}

/** The release and namespace of a place's `helm upgrade --install RELEASE CHART ... --namespace NS` line. */
export function helmRelease(place: Place): { line: string; release: string; namespace: string } {
  const line = place.apply.find((a) => a.startsWith('helm '));
  if (!line) throw new Error(`summary.json: place ${place.name} gives no helm command`);
  const words = line.split(/\s+/);
  return { line, release: words[3]!, namespace: words[words.indexOf('--namespace') + 1]! };
}

/** The summary's `helm upgrade --install ...` line for a place, run as written (in `out`), with this checkout's chart. */
export async function helmInstall(node: RealNode, out: string, place: Place): Promise<void> {
  const args = helmRelease(place)
    .line.split(/\s+/)
    .slice(1)
    .map((a) => (a === 'charts/scale-agent' ? CHART : a));
  await run(join(await resolveK8sBinDir(), 'helm'), [...args, '--wait', '--timeout=150s'], {
    cwd: out,
    env: helmEnv(node, out),
    timeoutMs: 180_000,
  });
}

/** `helm test` of a place's release: its exit code and, when it failed, what helm said. */
export async function helmTest(node: RealNode, out: string, place: Place): Promise<{ code: number; out: string }> {
  const { release, namespace } = helmRelease(place);
  const r = await run(
    join(await resolveK8sBinDir(), 'helm'),
    ['test', release, '--namespace', namespace, '--timeout=150s'],
    { env: helmEnv(node, out), timeoutMs: 180_000, allowFail: true },
  );
  return { code: r.code, out: r.code === 0 ? '' : r.stdout + r.stderr };
}

/**
 * What `promtool check metrics` finds in a scrape: it parses the text as Prometheus does (a parse error is a line of
 * its own, exit 1) and lints it (exit 3 with findings). prom-client's own default gauges keep their upstream names
 * (nodejs_active_*_total), which dashboards use as they are, so those findings alone are let through.
 */
export async function promtoolProblems(text: string): Promise<{ parsed: boolean; problems: string[] }> {
  const promtool = join(await resolveK8sBinDir(), 'promtool');
  const lint = await run(promtool, ['check', 'metrics'], { input: text, allowFail: true });
  const problems = (lint.stdout + lint.stderr)
    .split('\n')
    .filter((l) => l && !/^\w+_nodejs_active_(handles|requests|resources)_total non-counter metrics/.test(l));
  return { parsed: lint.code === 0 || lint.code === 3, problems };
}

/**
 * GET `url` from inside the cluster: node's fetch in a container of `pod` (the project's image), so cluster DNS,
 * kube-proxy and the Service's selector and ports are on the path. Returns the status and the body.
 */
export async function fetchFromPod(
  node: RealNode,
  at: { namespace: string; pod: string },
  url: string,
): Promise<RestAnswer> {
  const script =
    'const r = await fetch(process.argv[1], { signal: AbortSignal.timeout(20000) }); ' +
    'console.log(JSON.stringify({ status: r.status, body: await r.text() }));';
  const { stdout } = await node.kubectl(
    ['-n', at.namespace, 'exec', at.pod, '--', 'node', '--input-type=module', '-e', script, url],
    { timeoutMs: 60_000 },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as RestAnswer;
}

/** `helm test` of every place's release passes; a failure names the place and carries what helm said. */
export async function expectHelmTestsPass(node: RealNode, out: string): Promise<void> {
  for (const place of readSummary(out).places) {
    expect({ place: place.name, ...(await helmTest(node, out, place)) }).toEqual({
      place: place.name,
      code: 0,
      out: '',
    });
  }
}

/**
 * The pods `get` lists once every one is Running with every container ready, or as they are at the deadline: what a
 * user's `kubectl rollout status` waits for. An agent whose stream a rollout cut is unready until it has reconnected
 * and synced and its next readiness probe has run (up to a probe period later), so a single look right after a
 * rollout can catch that moment. Restarts are not waited out: the caller asserts them.
 */
export async function settledPods(get: () => Promise<PodState[]>, timeoutMs = 90_000): Promise<PodState[]> {
  const settled = (pods: PodState[]) => pods.every((p) => p.phase === 'Running' && p.containers.every((c) => c.ready));
  // Not settled by the deadline is the caller's to judge, from the pods as they are then.
  await waitFor('every pod Running and ready', async () => settled(await get()), timeoutMs).catch(() => undefined);
  return get();
}

/** Every pod Running, every container Ready without a restart: a failed expectation names the pod. */
export function expectAllReady(pods: PodState[]): void {
  for (const p of pods) {
    expect({ pod: p.pod, phase: p.phase }).toEqual({ pod: p.pod, phase: 'Running' });
    for (const c of p.containers) {
      expect({ pod: p.pod, ...c }).toEqual({ pod: p.pod, name: c.name, ready: true, restarts: 0 });
    }
  }
}

export interface RestAnswer {
  status: number;
  body: string;
}

/** A REST call as a test makes it (from this machine, or from a pod); `base` picks a replica where it matters. */
export type RestCall = (method: string, path: string, body?: unknown) => Promise<RestAnswer>;

/**
 * REST calls from this machine to `base` (the REST Service's ClusterIP, through kube-proxy's rules as from a pod, or
 * a replica's pod IP) with a bearer token.
 */
export function restFromHost(
  token: string,
  base: () => string,
): (method: string, path: string, body?: unknown, at?: string) => Promise<RestAnswer> {
  return async (method, path, body, at = base()) => {
    const r = await fetch(`${at}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      signal: AbortSignal.timeout(30_000),
    });
    return { status: r.status, body: await r.text() };
  };
}

/** The account names `/credentials` lists, sorted. */
export async function credentialNames(rest: RestCall): Promise<string[]> {
  const r = await rest('GET', '/credentials');
  if (r.status !== 200) throw new Error(`GET /credentials: ${r.status} ${r.body}`);
  return (JSON.parse(r.body) as { name: string }[]).map((a) => a.name).sort();
}

/** Waits until `/credentials` lists exactly `want` (the agents' streams and registrations take a moment). */
export async function waitForAccounts(rest: RestCall, want: string[], timeoutMs = 90_000): Promise<void> {
  const sorted = [...want].sort();
  await waitFor(
    `accounts ${sorted.join(', ')} in /credentials`,
    async () => (await credentialNames(rest)).join() === sorted.join(),
    timeoutMs,
  );
}

/**
 * Waits for `/manifests/ACCOUNT/NAMESPACE/KIND NAME` to answer 200 (the cache is fed by the agent's watch, so a read
 * may trail a write by a moment) and returns the manifest view.
 */
export async function waitForManifest(
  rest: RestCall,
  target: { account: string; namespace: string; name: string },
  timeoutMs = 60_000,
): Promise<{ account: string; location: string; manifest: Record<string, unknown> }> {
  const path = `/manifests/${target.account}/${target.namespace}/${encodeURIComponent(target.name)}`;
  const r = await waitFor(
    `${target.name} through ${target.account}`,
    async () => {
      const x = await rest('GET', path);
      return x.status === 200 ? x : undefined;
    },
    timeoutMs,
  );
  return JSON.parse(r.body) as { account: string; location: string; manifest: Record<string, unknown> };
}

export interface TaskView {
  status: { completed: boolean; failed: boolean };
  history: { status: string }[];
}

/**
 * What Orca's deployManifest stage posts (Clouddriver's KubernetesDeployManifestDescription): one unversioned
 * ConfigMap into `namespace` of `account`; the task, once completed.
 */
export async function orcaDeployConfigMap(
  rest: RestCall,
  target: { account: string; namespace: string; name: string },
): Promise<TaskView> {
  const submitted = await rest('POST', '/kubernetes/ops', [
    {
      deployManifest: {
        account: target.account,
        cloudProvider: 'kubernetes',
        source: 'text',
        moniker: { app: 'install' },
        namespaceOverride: target.namespace,
        manifests: [
          {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: target.name, annotations: { 'strategy.spinnaker.io/versioned': 'false' } },
            data: { k: 'v' },
          },
        ],
      },
    },
  ]);
  if (submitted.status !== 200) throw new Error(`POST /kubernetes/ops: ${submitted.status} ${submitted.body}`);
  const { id } = JSON.parse(submitted.body) as { id: string };
  return waitFor(
    `task ${id} done`,
    async () => {
      const r = await rest('GET', `/task/${id}`);
      if (r.status !== 200) throw new Error(`GET /task/${id}: ${r.status} ${r.body}`);
      const task = JSON.parse(r.body) as TaskView;
      return task.status.completed ? task : undefined;
    },
    90_000,
  );
}

/**
 * An Orca-shaped deploy of ConfigMap `name` (data k=v) that must complete without failing (the task's history is the
 * message when not), and the object then in the API server: what every install checks of the write path.
 */
export async function expectDeployed(
  node: RealNode,
  rest: RestCall,
  target: { account: string; namespace: string; name: string },
): Promise<void> {
  const task = await orcaDeployConfigMap(rest, target);
  expect(task.status, task.history.map((h) => h.status).join('\n')).toMatchObject({ completed: true, failed: false });
  const inApi = await node.kubectl([
    '-n',
    target.namespace,
    'get',
    'configmap',
    target.name,
    '-o',
    'jsonpath={.data.k}',
  ]);
  expect({ ...target, data: inApi.stdout }).toEqual({ ...target, data: 'v' });
}
