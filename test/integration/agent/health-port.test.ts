/**
 * The agent's health-only listener (config `health`), what the kubelet's HTTP probes call: a real agent process
 * answers /healthz and /readyz there from a non-loopback address (as the kubelet reaches the pod IP), with the
 * admin endpoint's readiness, and serves nothing else; the admin endpoint stays on loopback.
 */
import { mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { freePort, waitFor } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';

/** An address of this machine other than loopback, as the kubelet would use the pod IP. */
function podIp(): string | undefined {
  return Object.values(networkInterfaces())
    .flatMap((l) => l ?? [])
    .find((i) => i.family === 'IPv4' && !i.internal)?.address;
}

let dir: string;
let server: PluginServerProcess;
let agent: AgentProcess;
let healthPort: number;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'scale-agent-health-port-'));
  server = await PluginServerProcess.start({ dir });
  healthPort = await freePort();
  // No accounts: ready as soon as the stream is up, so readiness follows the plugin-server alone.
  agent = await AgentProcess.start({
    dir,
    serverAddress: server.grpcAddress,
    accounts: [],
    extra: { health: { host: '0.0.0.0', port: healthPort } },
  });
});

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  await rm(dir, { recursive: true, force: true });
});

const rewrite = async (health: Record<string, unknown>) => {
  const config = parse(await readFile(agent.configFile, 'utf8')) as Record<string, unknown>;
  await writeFile(`${agent.configFile}.tmp`, stringify({ ...config, health }));
  await rename(`${agent.configFile}.tmp`, agent.configFile);
};

describe('agent health port', () => {
  it('answers /healthz and /readyz off loopback, and only those', async () => {
    const ip = podIp();
    expect(ip, 'a non-loopback IPv4 address to probe from').toBeDefined();
    const base = `http://${ip}:${healthPort}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    const admin = (await (await fetch(`${agent.adminBase}/readyz`)).json()) as { ready: boolean };
    expect(((await ready.json()) as { ready: boolean }).ready).toBe(admin.ready);
    // The account and watch listings, metrics and version stay on the loopback admin endpoint.
    for (const path of ['/accounts', '/watches', '/metrics', '/version']) {
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
      expect((await fetch(`${agent.adminBase}${path}`)).status, path).toBe(200);
    }
    await expect(fetch(`http://${ip}:${agent.adminPort}/healthz`)).rejects.toThrow();
  });

  it('reports not ready there while the plugin-server is down, and ready again after', async () => {
    const url = `http://${podIp()}:${healthPort}/readyz`;
    await server.stop();
    await waitFor('not ready', async () => (await fetch(url)).status === 503, 30_000);
    expect((await fetch(url.replace('/readyz', '/healthz'))).status).toBe(200);
    await server.restart();
    await waitFor('ready again', async () => (await fetch(url)).status === 200, 60_000);
  });

  it('serves /metrics there too with health.metrics, still no listings; a reload turns it off again', async () => {
    const base = `http://${podIp()}:${healthPort}`;
    await rewrite({ host: '0.0.0.0', port: healthPort, metrics: true });
    await waitFor(
      'metrics on the health port',
      async () => (await fetch(`${base}/metrics`).catch(() => undefined))?.ok ?? false,
      30_000,
    );
    const body = await (await fetch(`${base}/metrics`)).text();
    expect(body).toMatch(/^# TYPE scale_agent_\w+/m);
    for (const path of ['/accounts', '/watches', '/version'])
      expect((await fetch(`${base}${path}`)).status, path).toBe(404);
    await rewrite({ host: '0.0.0.0', port: healthPort });
    await waitFor(
      'metrics off again',
      async () => (await fetch(`${base}/metrics`).catch(() => undefined))?.status === 404,
      30_000,
    );
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
  });

  it('moves with a config reload, and closes when the port is taken out', async () => {
    const moved = await freePort();
    await rewrite({ host: '127.0.0.1', port: moved });
    await waitFor('health on the new port', async () => (await fetch(`http://127.0.0.1:${moved}/healthz`)).ok, 30_000);
    await expect(fetch(`http://127.0.0.1:${healthPort}/healthz`)).rejects.toThrow();
    await rewrite({});
    await waitFor('health listener closed', () =>
      fetch(`http://127.0.0.1:${moved}/healthz`).then(
        () => false,
        () => true,
      ),
    );
    // The admin endpoint did not move with it.
    expect((await fetch(`${agent.adminBase}/healthz`)).status).toBe(200);
  });
});
