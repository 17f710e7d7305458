/**
 * `npm run demo`: scale-agent end to end on this machine, for a first look. It starts a private Kubernetes control
 * plane (etcd, kube-apiserver, kube-controller-manager: no nodes, so the sample's pods stay Pending), a plugin-server
 * and an agent with one account, deploys a sample application through `POST /kubernetes/ops` as Spinnaker's Orca
 * does, prints what to open, and runs until Ctrl-C, then stops everything and deletes its directory.
 * Progress goes to stderr; the `ready` block with the URLs goes to stdout (test/integration/cli/demo.test.ts reads it).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane } from './control-plane.js';
import { run } from './exec.js';
import { AgentProcess, PluginServerProcess } from './processes.js';

const ACCOUNT = 'demo';
const NAMESPACE = 'demo';
const APP = 'hello';

const say = (line: string) => process.stderr.write(`[demo] ${line}\n`);

/** The sample application, as a pipeline's Deploy (Manifest) stage would send it. */
function deployBody(): unknown[] {
  const labels = { app: 'hello-web' };
  return [
    {
      deployManifest: {
        account: ACCOUNT,
        cloudProvider: 'kubernetes',
        source: 'text',
        moniker: { app: APP },
        namespaceOverride: NAMESPACE,
        manifests: [
          {
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'hello-web' },
            spec: {
              replicas: 2,
              selector: { matchLabels: labels },
              template: {
                metadata: { labels },
                spec: { containers: [{ name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] },
              },
            },
          },
          {
            apiVersion: 'v1',
            kind: 'Service',
            metadata: { name: 'hello-web' },
            spec: { selector: labels, ports: [{ port: 80, targetPort: 80 }] },
          },
        ],
      },
    },
  ];
}

async function waitUntil<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(200);
  }
}

const dir = mkdtempSync(join(tmpdir(), 'scale-agent-demo-'));
const stops: (() => Promise<unknown>)[] = [];
let stopping = false;
async function stop(code: number): Promise<never> {
  if (stopping) return new Promise<never>(() => undefined);
  stopping = true;
  say('stopping the agent, the plugin-server and the control plane...');
  for (const s of stops.reverse()) await s().catch(() => undefined);
  // A failed start keeps its directory: the logs there say why.
  if (code === 0) rmSync(dir, { recursive: true, force: true });
  say('stopped');
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

try {
  say(`starting a Kubernetes control plane in ${dir}/cp (takes 5 to 30 s)`);
  const cp = await ControlPlane.start({ dir: join(dir, 'cp'), log: (l) => say(l) });
  stops.push(() => cp.stop());
  const kubectl = (args: string[]) =>
    run(join(cp.binDir, 'kubectl'), ['--kubeconfig', cp.kubeconfig, ...args], { env: { HOME: dir } });
  await kubectl(['create', 'namespace', NAMESPACE]);

  say('starting a plugin-server (memory store, no REST auth: loopback only)');
  const server = await PluginServerProcess.start({ dir, extra: { logLevel: 'info' } });
  stops.push(() => server.stop());
  say(`starting an agent with account ${ACCOUNT} (namespace ${NAMESPACE})`);
  const agent = await AgentProcess.start({
    dir,
    agentId: 'demo-agent',
    serverAddress: server.grpcAddress,
    accounts: [{ name: ACCOUNT, kubeconfigFile: cp.kubeconfig, namespaces: [NAMESPACE] }],
  });
  stops.push(() => agent.stop());

  say(`deploying application ${APP} through POST /kubernetes/ops`);
  const base = server.httpBase;
  const posted = await fetch(`${base}/kubernetes/ops`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(deployBody()),
  });
  const { id } = (await posted.json()) as { id: string };
  const task = await waitUntil('the deploy task', async () => {
    const t = (await (await fetch(`${base}/task/${id}`)).json()) as {
      status: { completed: boolean; failed: boolean };
      history: { status: string }[];
    };
    return t.status.completed ? t : undefined;
  });
  if (task.status.failed) throw new Error(`the deploy failed: ${task.history.map((h) => h.status).join(' / ')}`);
  // The Deployment's ReplicaSet is the server group; the controller-manager creates it a moment after the deploy.
  await waitUntil('the server group in the cache', async () => {
    const res = await fetch(`${base}/applications/${APP}/serverGroups`);
    return res.ok && ((await res.json()) as unknown[]).length > 0 ? true : undefined;
  });

  const cli = 'npx scale-agent';
  process.stdout.write(
    [
      `[demo] ready: application ${APP} deployed to account ${ACCOUNT} through ${base}/kubernetes/ops (task ${id})`,
      '',
      'The fleet, redrawn every 2 s:',
      `  ${cli} status --watch --url ${base}`,
      '',
      'What Spinnaker (Deck, Orca) reads:',
      `  ${base}/applications/${APP}`,
      `  ${base}/applications/${APP}/serverGroups`,
      `  ${base}/applications/${APP}/clusters`,
      `  ${base}/manifests/${ACCOUNT}/${NAMESPACE}/deployment%20hello-web`,
      `  ${base}/credentials?expand=true`,
      `  ${base}/task/${id}`,
      '',
      'Metrics:',
      `  ${base}/metrics`,
      `  ${agent.adminBase}/metrics`,
      '',
      'The cluster (no nodes, so pods stay Pending):',
      `  ${join(cp.binDir, 'kubectl')} --kubeconfig ${cp.kubeconfig} -n ${NAMESPACE} get all`,
      `Logs: ${server.logFile}, ${agent.logFile}`,
      '',
      'Press Ctrl-C to stop and clean up.',
      '',
    ].join('\n'),
  );
  setInterval(() => undefined, 1 << 30);
} catch (e) {
  say(`failed: ${(e as Error).message} (logs in ${dir})`);
  await stop(1);
}
