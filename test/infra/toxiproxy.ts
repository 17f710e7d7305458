/**
 * A Toxiproxy server (built by tools/k8s/build.sh) for fault tests: proxies between real components whose
 * links get toxics (latency, bandwidth, timeouts, resets) added and removed while they run, through its HTTP API.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort, testEnv, toolPath, waitFor } from './index.js';
import { ServerProcess } from './processes-group.js';

export interface Toxic {
  type: 'latency' | 'bandwidth' | 'slow_close' | 'timeout' | 'reset_peer' | 'slicer' | 'limit_data';
  stream: 'upstream' | 'downstream';
  attributes: Record<string, number>;
}

export class Toxiproxy {
  private constructor(
    private readonly proc: ServerProcess,
    readonly api: string,
  ) {}

  static async start(dir: string): Promise<Toxiproxy> {
    const port = await freePort();
    const proc = ServerProcess.start(
      'toxiproxy',
      toolPath('toxiproxy-server'),
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

  /** A proxy listening on a free local port in front of `upstream` (host:port); returns its address. */
  async proxy(name: string, upstream: string): Promise<string> {
    const listen = `127.0.0.1:${await freePort()}`;
    await this.call('POST', '/proxies', { name, listen, upstream }, 201);
    return listen;
  }

  async addToxic(proxy: string, name: string, toxic: Toxic): Promise<void> {
    await this.call('POST', `/proxies/${proxy}/toxics`, { name, ...toxic }, 200);
  }

  /** Data a toxic holds back (latency, bandwidth) is passed on, not dropped, when it is removed. */
  async removeToxic(proxy: string, name: string): Promise<void> {
    await this.call('DELETE', `/proxies/${proxy}/toxics/${name}`, undefined, 204);
  }

  stop(): Promise<void> {
    return this.proc.stop();
  }

  private async call(method: string, path: string, body: unknown, expected: number): Promise<void> {
    const res = await fetch(`${this.api}${path}`, {
      method,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (res.status !== expected) throw new Error(`toxiproxy ${method} ${path}: ${res.status} ${await res.text()}`);
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
