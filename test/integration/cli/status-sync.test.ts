/**
 * Change→cache lag and initial-sync progress, end to end with real processes on the real control plane: one account
 * reaches its API server directly, the other through Toxiproxy adding latency, so its paginated initial LIST takes
 * seconds. While it lists, /armory/accounts and `scale-agent status` (the built CLI) show it syncing, /metrics counts
 * it, and the agent logs progress with a total and ETA; afterwards status shows the lag of a change just made.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetStatus } from '../../../src/cli/status/fleet.js';
import { createNamespace, kubectl, run, testEnv, waitFor } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';
import { apiServerHostPort, kubeconfigThrough, Toxiproxy } from '../../infra/toxiproxy.js';

const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, ...args], { allowFail: true });
const CONFIGMAPS = 120;

interface AccountView {
  name: string;
  changeLagMs: number | null;
  lastChangeAt: number | null;
  sync: { scopesListing: number; scopesListed: number; objects: number; startedAt: number } | null;
}

interface LogLine {
  msg: string;
  account?: string;
  objects?: number;
  total?: number;
  etaSeconds?: number;
  objectsPerSecond?: number;
}

describe('status: change lag and initial sync progress', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  let server: PluginServerProcess;
  let agent: AgentProcess;
  let slowNs: string;
  let fastNs: string;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sa-status-sync-'));
    fastNs = await createNamespace('sync-fast');
    slowNs = await createNamespace('sync-slow');
    const items = Array.from({ length: CONFIGMAPS }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `cm-${i}`, namespace: slowNs },
      data: { i: String(i) },
    }));
    const list = join(dir, 'configmaps.json');
    writeFileSync(list, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    await kubectl(['apply', '-f', list]);

    // Toxiproxy in front of the API server, adding 200 ms to every response of the slow account.
    const toxi = await Toxiproxy.start(dir);
    cleanups.push(() => toxi.stop());
    const through = await toxi.createProxy('apiserver', apiServerHostPort());
    await toxi.addToxic('apiserver', 'latency', 'downstream', {
      type: 'latency',
      attributes: { latency: 200 },
    });
    const slowKubeconfig = kubeconfigThrough(through, join(dir, 'slow-kubeconfig'));

    server = await PluginServerProcess.start({ dir });
    cleanups.push(() => server.stop());
    const accounts = [
      { name: 'fast', kubeconfigFile: testEnv().kubeconfig, namespaces: [fastNs], kinds: ['ConfigMap'] },
      { name: 'slow', kubeconfigFile: slowKubeconfig, namespaces: [slowNs], kinds: ['ConfigMap'] },
    ];
    agent = await AgentProcess.start({
      dir,
      agentId: 'sync-agent',
      serverAddress: server.grpcAddress,
      accounts,
      // Paginated LIST (which says how many objects remain) in pages of 2: about 60 round trips of 200 ms, so the
      // sync lasts long enough for a status CLI (a Node start on a loaded machine) to see it.
      extra: {
        kubernetes: {
          accounts,
          rediscoverySeconds: 30,
          streamingLists: 'never',
          listPageSize: 2,
          syncProgressSeconds: 0.5,
        },
      },
      waitReady: false,
    });
    cleanups.push(() => agent.stop());
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  const account = async (name: string) => (await server.get<AccountView>(`/armory/accounts/${name}`)).body;

  it('shows the slow account syncing with its progress while it lists, in the API, /metrics and status', async () => {
    const syncing = await waitFor('the slow account to be listing', async () => {
      const a = await account('slow').catch(() => undefined);
      return a?.sync && a.sync.objects > 0 ? a.sync : undefined;
    });
    expect(syncing.scopesListing).toBe(1);
    expect(syncing.objects).toBeLessThan(CONFIGMAPS + 1);
    expect(Date.now() - syncing.startedAt).toBeGreaterThanOrEqual(0);
    const metrics = await (await fetch(`${server.httpBase}/metrics`)).text();
    expect(metrics).toMatch(/^scale_agent_plugin_server_accounts_syncing 1$/m);

    const r = await cli(['status', '--url', server.httpBase]);
    expect(r.stdout).toMatch(/ 1 syncing {2}/);
    expect(r.stdout).toMatch(/^ACCOUNT +STATE +AGENT +REPLICA +OBJECTS +LAG +SYNC +ERROR$/m);
    expect(r.stdout).toMatch(/^slow +ACTIVE +sync-agent +local +\d+ +\S+ +listing 1, 0 done, \d+ objects, \d+s$/m);
    const json = JSON.parse((await cli(['status', '--url', server.httpBase, '--json'])).stdout) as FleetStatus;
    expect(json.accounts.find((a) => a.name === 'fast')?.sync).toBeNull();
  });

  it('logs the progress on the agent with a total and an ETA, then the end of the sync', async () => {
    await agent.waitReady();
    const read = (): LogLine[] =>
      readFileSync(agent.logFile, 'utf8')
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as LogLine)
        .filter((l) => l.account === 'slow');
    // The agent writes its log asynchronously: on a loaded machine the end line can reach the file after /readyz
    // has answered ready (a fresh run read the file too early once).
    const lines = await waitFor('the end of the initial sync in the agent log', async () => {
      const all = read();
      return all.some((l) => l.msg === 'initial sync done') ? all : undefined;
    });
    const progress = lines.filter((l) => l.msg === 'initial sync progress');
    expect(progress.length).toBeGreaterThan(0);
    // The namespace's kube-root-ca.crt is the one more object.
    expect(progress.some((l) => l.total === CONFIGMAPS + 1 && (l.etaSeconds ?? -1) >= 0)).toBe(true);
    expect(progress.every((l) => (l.objects ?? 0) <= CONFIGMAPS + 1 && (l.objectsPerSecond ?? -1) >= 0)).toBe(true);
    const done = lines.filter((l) => l.msg === 'initial sync done');
    expect(done).toEqual([expect.objectContaining({ objects: CONFIGMAPS + 1 })]);
    expect((await account('slow')).sync).toBeNull();
  });

  it('shows the change→cache lag of a change just made', async () => {
    const before = Date.now();
    await kubectl(['create', 'configmap', 'lagged', '-n', fastNs]);
    const fast = await waitFor('the change to be applied', async () => {
      const a = await account('fast');
      return a.lastChangeAt !== null && a.lastChangeAt >= before ? a : undefined;
    });
    expect(fast.changeLagMs).toBeGreaterThanOrEqual(0);
    expect(fast.changeLagMs).toBeLessThan(Date.now() - before + 1);
    const r = await cli(['status', '--url', server.httpBase, '--account', 'fast']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^fast +ACTIVE +sync-agent +local +\d+ +\d+(ms|\.\ds) +-$/m);
  });
});
