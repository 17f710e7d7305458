/**
 * `npm run demo` as a newcomer runs it: started as package.json says, it brings up its own control plane, a
 * plugin-server and an agent, deploys the sample application through /kubernetes/ops and prints `ready` with URLs;
 * those URLs answer (the application, its server group, /metrics, `scale-agent status`), and SIGINT (Ctrl-C) stops
 * every process and removes the demo's directory.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import type { FleetStatus } from '../../../src/cli/status/fleet.js';
import { run, waitFor } from '../../infra/index.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const bin = fileURLToPath(new URL('../../../bin/run.js', import.meta.url));

describe('npm run demo', () => {
  let child: ChildProcess | undefined;
  let stdout = '';
  let stderr = '';
  // A failed assertion still stops the demo the way a user does, so it takes its processes down with it.
  afterAll(async () => {
    if (!child || child.exitCode !== null) return;
    const gone = new Promise((resolve) => child!.once('exit', resolve));
    child.kill('SIGINT');
    await gone;
  }, 60_000);

  it('prints ready with URLs that answer, and stops cleanly on SIGINT', async () => {
    const scripts = (JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as { scripts: Record<string, string> })
      .scripts;
    const [runner, script] = scripts.demo!.split(' ');
    expect(runner).toBe('tsx');
    child = spawn(process.execPath, ['--import', 'tsx', script!], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => child!.on('exit', (code) => resolve(code)));

    await waitFor('the demo to print ready', () => /^\[demo\] ready: /m.test(stdout) || undefined, 180_000).catch(
      (e: Error) => {
        throw new Error(`${e.message}\nstderr:\n${stderr.slice(-3000)}`);
      },
    );
    // The URLs to open: every printed address with a path (the bare base is only an argument of status).
    const urls = [...stdout.matchAll(/(https?:\/\/[^/\s]+\/\S+)/g)].map((m) => m[1]!);
    const base = /status --watch --url (\S+)/.exec(stdout)?.[1];
    expect(base).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const dir = /control plane in (\S+)\/cp /.exec(stderr)?.[1];
    expect(dir && existsSync(dir)).toBe(true);

    // Every printed URL answers 200.
    expect(urls.length).toBeGreaterThan(5);
    for (const url of urls.filter((u) => !u.endsWith('/kubernetes/ops'))) {
      expect((await fetch(url)).status, url).toBe(200);
    }
    const app = (await (await fetch(`${base}/applications/hello`)).json()) as { name: string; clusters: object };
    expect(app.name).toBe('hello');
    expect(Object.keys(app.clusters)).toEqual(['demo']);
    const groups = (await (await fetch(`${base}/applications/hello/serverGroups`)).json()) as { name: string }[];
    expect(groups.map((g) => g.name)).toEqual([expect.stringMatching(/^replicaSet hello-web-[a-z0-9]+$/)]);
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/^scale_agent_plugin_server_sessions 1$/m);

    // The command it prints, run with the built CLI.
    const status = await run(process.execPath, [bin, 'status', '--url', base!, '--json'], { allowFail: true });
    expect(status.code, status.stderr).toBe(0);
    expect((JSON.parse(status.stdout) as FleetStatus).accounts).toEqual([
      expect.objectContaining({ name: 'demo', state: 'ACTIVE', agentId: 'demo-agent' }),
    ]);

    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(stderr).toMatch(/^\[demo\] stopped$/m);
    await expect(fetch(`${base}/readyz`)).rejects.toThrow();
    expect(existsSync(dir!)).toBe(false);
  }, 300_000);
});
