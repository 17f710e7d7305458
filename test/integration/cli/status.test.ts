/**
 * `scale-agent status` as a user runs it (the built CLI, bin/run.js) against a real plugin-server and agent on the
 * real control plane: JSON and text views, filters, exit codes for a healthy fleet, an ORPHANED account and an
 * unreachable server, and `--watch` read off a real terminal (tmux) as a person would see it.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FleetStatus } from '../../../src/cli/status/fleet.js';
import { createNamespace, freePort, kubectl, run, testEnv, waitFor } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';

const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));
const cli = (args: string[]) => run(process.execPath, [bin, ...args], { allowFail: true });

describe('scale-agent status', () => {
  let server: PluginServerProcess;
  let agent: AgentProcess;
  const socket = `sa-status-${process.pid}`;
  const tmux = (args: string[]) => run('tmux', ['-L', socket, ...args], { allowFail: true });

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sa-status-'));
    const ns = await createNamespace('status');
    server = await PluginServerProcess.start({ dir });
    const spec = { name: 'fleet-a', kubeconfigFile: testEnv().kubeconfig, namespaces: [ns], kinds: ['ConfigMap'] };
    agent = await AgentProcess.start({
      dir,
      agentId: 'status-agent',
      serverAddress: server.grpcAddress,
      accounts: [spec],
    });
    await kubectl(['create', 'configmap', 'one', '-n', ns]);
    await kubectl(['create', 'configmap', 'two', '-n', ns]);
    await waitFor('the three ConfigMaps cached', async () => {
      const r = await server
        .get<unknown[]>(`/admin/cache/fleet-a?kind=ConfigMap&namespace=${ns}`)
        .catch(() => undefined);
      return Array.isArray(r?.body) && r.body.length === 3;
    });
  });
  afterAll(async () => {
    await tmux(['kill-server']);
    await agent?.stop();
    await server?.stop();
  });

  it('--json describes a healthy fleet and exits 0', async () => {
    const r = await cli(['status', '--url', server.httpBase, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const fleet = JSON.parse(r.stdout) as FleetStatus;
    expect(fleet.ready).toBe(true);
    expect(fleet.problems).toEqual([]);
    expect(fleet.agents).toEqual([
      expect.objectContaining({ agentId: 'status-agent', heldBy: 'local', accounts: ['fleet-a'], rejected: [] }),
    ]);
    // Two ConfigMaps plus the namespace's kube-root-ca.crt, which the controller-manager creates.
    expect(fleet.accounts).toEqual([
      expect.objectContaining({
        name: 'fleet-a',
        state: 'ACTIVE',
        agentId: 'status-agent',
        heldBy: 'local',
        objects: 3,
      }),
    ]);
  });

  it('prints tables a person can read, and the filters narrow them', async () => {
    const r = await cli(['status', '--url', server.httpBase]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    expect(lines[0]).toMatch(/ ready {2}1 agents {2}1 accounts {2}0 pending operations {2}healthy$/);
    expect(lines).toContainEqual(expect.stringMatching(/^status-agent +local +\S+ +- +\S+ +1 +-$/));
    expect(lines).toContainEqual(expect.stringMatching(/^ACCOUNT +STATE +AGENT +REPLICA +OBJECTS +LAG +SYNC +ERROR$/));
    // The lag of the last batch applied (the second ConfigMap), and no sync running.
    expect(lines).toContainEqual(expect.stringMatching(/^fleet-a +ACTIVE +status-agent +local +3 +\d+(ms|\.\ds) +-$/));
    const none = await cli(['status', '--url', server.httpBase, '--account', 'other-*', '--json']);
    expect((JSON.parse(none.stdout) as FleetStatus).accounts).toEqual([]);
    const glob = await cli(['status', '--url', server.httpBase, '--account', 'fleet-*', '--json']);
    expect((JSON.parse(glob.stdout) as FleetStatus).accounts.map((a) => a.name)).toEqual(['fleet-a']);
  });

  it('--watch redraws in place in a real terminal, and shows an orphaned account with exit 1 after', async () => {
    const shown = async () => (await tmux(['capture-pane', '-p', '-t', 'watch'])).stdout;
    const started = await tmux([
      'new-session',
      '-d',
      '-s',
      'watch',
      '-x',
      '150',
      '-y',
      '30',
      `${process.execPath} ${bin} status --url ${server.httpBase} --watch --interval 1`,
    ]);
    expect(started.code, started.stderr).toBe(0);
    await waitFor('the first frame', async () => /fleet-a +ACTIVE/.test(await shown()));
    const first = (await shown()).split('\n');
    // One frame on the screen, from the top: the header is the first line, not scrolled away by earlier frames.
    expect(first[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+ {2}ready {2}1 agents/);
    expect(first.filter((l) => l.startsWith('AGENT '))).toHaveLength(1);

    await agent.kill();
    await waitFor('the watch to show the account ORPHANED', async () => /fleet-a +ORPHANED/.test(await shown()));
    const after = await shown();
    expect(after).toMatch(/^! account fleet-a is ORPHANED: no agent holds it$/m);
    expect(after.split('\n').filter((l) => l.startsWith('ACCOUNT '))).toHaveLength(1);

    const r = await cli(['status', '--url', server.httpBase]);
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/1 problem$/m);
    // Filtered to ACTIVE accounts there is nothing wrong to report.
    expect((await cli(['status', '--url', server.httpBase, '--state', 'ACTIVE'])).code).toBe(0);
    await agent.restart();
  });

  it('exits 3 naming the URL when the server cannot be reached', async () => {
    const url = `http://127.0.0.1:${await freePort()}`;
    const r = await cli(['status', '--url', url]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`cannot reach the plugin-server at ${url}`);
  });
});
