/**
 * Starts the real plugin-server (`scale-agent plugin-server`, from dist/) as its own process on free
 * loopback ports and waits until /readyz answers, so benchmarks measure the product as users run it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from '../../test/infra/ports.js';
import { repoRoot } from './child.js';

export interface RunningPluginServer {
  grpcAddress: string;
  httpUrl: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** `root`: the checkout whose built `bin/run.js` runs (another version's, for the rolling-upgrade check). */
export async function startPluginServer(
  storage: Record<string, unknown> = { type: 'memory' },
  opts: { root?: string } = {},
): Promise<RunningPluginServer> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-ps-'));
  const grpcPort = await freePort();
  const httpPort = await freePort();
  const config = join(dir, 'plugin-server.yaml');
  writeFileSync(
    config,
    JSON.stringify({
      grpc: { host: '127.0.0.1', port: grpcPort },
      http: { host: '127.0.0.1', port: httpPort },
      storage,
      logLevel: 'warn',
    }),
  );
  // BENCH_PLUGIN_SERVER_NODE_OPTIONS, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof", profiles the server under load.
  const nodeFlags = (process.env.BENCH_PLUGIN_SERVER_NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean);
  // BENCH_PLUGIN_SERVER_ROOT runs another build (a directory with bin/, dist/, the oclif manifest and
  // node_modules), for before/after comparisons of the server from one checkout.
  const root = opts.root ?? process.env.BENCH_PLUGIN_SERVER_ROOT ?? repoRoot;
  const child = spawn(process.execPath, [...nodeFlags, join(root, 'bin/run.js'), 'plugin-server', '--config', config], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // A benchmark that dies of an error must not leave its server running (and loading the next benchmark).
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  child.once('exit', () => process.off('exit', killOnExit));
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`plugin-server exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${httpUrl}/readyz`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error('plugin-server not ready after 30 s');
    }
    await sleep(100);
  }
  return {
    grpcAddress: `127.0.0.1:${grpcPort}`,
    httpUrl,
    child,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await new Promise((r) => child.once('exit', r));
      clearTimeout(t);
    },
  };
}
