/**
 * Toxiproxy (built by tools/k8s/build.sh) as a process, and a small typed client for its REST admin API
 * (https://github.com/Shopify/toxiproxy#http-api): proxies between real components whose links get toxics (latency,
 * bandwidth, timeouts, resets) added and removed, or are cut, while they run. Integration tests and the fault rig
 * (test/infra/faults, bench/faults.ts) share this one client. No npm client is in the dependency tree, and the API is
 * a handful of JSON calls, so the client lives here rather than as a new dependency.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { testEnv } from './index.js';
import { freePort } from './ports.js';
import { ServerProcess } from './processes-group.js';
import { waitFor } from './wait.js';

/** The toxics Toxiproxy ships, with the attributes each takes. */
export type Toxic =
  | { type: 'latency'; attributes: { latency: number; jitter?: number } }
  | { type: 'bandwidth'; attributes: { rate: number } }
  | { type: 'slow_close'; attributes: { delay: number } }
  | { type: 'timeout'; attributes: { timeout: number } }
  | { type: 'reset_peer'; attributes: { timeout: number } }
  | { type: 'slicer'; attributes: { average_size: number; size_variation: number; delay: number } }
  | { type: 'limit_data'; attributes: { bytes: number } };

/** upstream: client to server; downstream: server to client. */
export type ToxicStream = 'upstream' | 'downstream';

export interface ProxyInfo {
  name: string;
  listen: string;
  upstream: string;
  enabled: boolean;
}

export class Toxiproxy {
  private constructor(
    private readonly proc: ServerProcess,
    readonly api: string,
  ) {}

  get pid(): number {
    return this.proc.pid;
  }

  /**
   * Starts toxiproxy-server on a free port, logging into `dir`. `binDir` defaults to the test run's binaries
   * (set by global-setup); runners outside vitest (bench/) pass the one resolveK8sBinDir() found.
   */
  static async start(dir: string, binDir = testEnv().binDir): Promise<Toxiproxy> {
    const port = await freePort();
    const proc = ServerProcess.start(
      'toxiproxy',
      join(binDir, 'toxiproxy-server'),
      ['-host', '127.0.0.1', '-port', String(port)],
      join(dir, 'toxiproxy.log'),
    );
    const t = new Toxiproxy(proc, `http://127.0.0.1:${port}`);
    await waitFor('toxiproxy API', async () => {
      proc.assertRunning();
      return (await fetch(`${t.api}/version`).catch(() => undefined))?.ok ? true : undefined;
    });
    return t;
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }

  /** A proxy listening on a fresh loopback port in front of `upstream` (host:port); returns its listen address. */
  async createProxy(name: string, upstream: string): Promise<string> {
    const listen = `127.0.0.1:${await freePort()}`;
    await this.call('POST', '/proxies', { name, listen, upstream, enabled: true });
    return listen;
  }

  /** Points an existing proxy at another upstream (a restarted server on a new port). */
  async setUpstream(name: string, upstream: string): Promise<void> {
    await this.call('POST', `/proxies/${name}`, { upstream });
  }

  /** Disabled: every connection through it is closed and new ones are refused (the link is down). */
  async setEnabled(name: string, enabled: boolean): Promise<void> {
    await this.call('POST', `/proxies/${name}`, { enabled });
  }

  async addToxic(proxy: string, toxicName: string, stream: ToxicStream, toxic: Toxic): Promise<void> {
    await this.call('POST', `/proxies/${proxy}/toxics`, { name: toxicName, stream, toxicity: 1, ...toxic });
  }

  /** Data a toxic holds back (latency, bandwidth) is passed on, not dropped, when it is removed. */
  async removeToxic(proxy: string, toxicName: string): Promise<void> {
    await this.call('DELETE', `/proxies/${proxy}/toxics/${toxicName}`);
  }

  /** Every proxy enabled again and every toxic removed. */
  async reset(): Promise<void> {
    await this.call('POST', '/reset');
  }

  async proxies(): Promise<Record<string, ProxyInfo>> {
    return (await this.call('GET', '/proxies')) as Record<string, ProxyInfo>;
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(this.api + path, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`toxiproxy ${method} ${path}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  }
}

/**
 * Writes a copy of the shared admin kubeconfig whose server is `through` (a proxy in front of the API server);
 * TLS still verifies the API server's certificate, which is valid for 127.0.0.1. Returns the file.
 */
export function kubeconfigThrough(through: string, file: string): string {
  writeFileSync(file, readFileSync(testEnv().kubeconfig, 'utf8').replace(apiServerHostPort(), through));
  return file;
}

/** host:port of the shared API server. */
export function apiServerHostPort(): string {
  return new URL(testEnv().server).host;
}
