import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { versionInfo } from '../shared/version.js';

/** What the admin endpoints read; the Agent provides it. */
export interface AdminSource {
  registry: Registry;
  readiness(): { ready: boolean; [key: string]: unknown };
  accounts(): unknown[];
  watches(filter: { account?: string; state?: string }): unknown[];
}

/**
 * Local admin HTTP (loopback by default): /healthz (the process serves requests), /readyz (stream connected and
 * every accepted account synced; 503 with the reason otherwise), /metrics, /accounts, /watches, /version.
 */
export class AdminServer {
  private server: http.Server | undefined;

  /**
   * `healthOnly`: serve /healthz and /readyz and nothing else. That listener binds where the kubelet reaches it
   * (the pod IP), so it must not hand out the account and watch listings the loopback admin endpoint shows.
   * `metrics`: also serve /metrics there (config `health.metrics`, read per request so a reload applies), for
   * Prometheus, which scrapes the pod IP as the kubelet probes it.
   */
  constructor(
    private readonly source: AdminSource,
    private readonly options: { healthOnly?: boolean; metrics?: () => boolean } = {},
  ) {}

  async listen(host: string, port: number): Promise<AddressInfo> {
    const server = http.createServer((req, res) => {
      void this.handle(req, res).catch((e: unknown) => send(res, 500, { error: (e as Error).message }));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    this.server = server;
    return server.address() as AddressInfo;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  get address(): AddressInfo | undefined {
    return (this.server?.address() as AddressInfo | null) ?? undefined;
  }

  private servesOnHealth(path: string): boolean {
    return HEALTH_PATHS.has(path) || (path === '/metrics' && (this.options.metrics?.() ?? false));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://admin');
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'only GET' });
    if (this.options.healthOnly && !this.servesOnHealth(url.pathname)) {
      const paths = [...HEALTH_PATHS, ...(this.options.metrics?.() ? ['/metrics'] : [])];
      return send(res, 404, { error: `health endpoint serves only ${paths.join(', ')}` });
    }
    switch (url.pathname) {
      case '/healthz':
      case '/health':
        return send(res, 200, { status: 'ok' });
      case '/readyz': {
        const r = this.source.readiness();
        return send(res, r.ready ? 200 : 503, r);
      }
      case '/metrics': {
        const body = await this.source.registry.metrics();
        res.writeHead(200, { 'content-type': this.source.registry.contentType });
        res.end(body);
        return;
      }
      case '/accounts':
        return send(res, 200, this.source.accounts());
      case '/watches':
        return send(
          res,
          200,
          this.source.watches({
            account: url.searchParams.get('account') ?? undefined,
            state: url.searchParams.get('state') ?? undefined,
          }),
        );
      case '/version':
        return send(res, 200, versionInfo());
      default:
        return send(res, 404, { error: `no such endpoint: ${url.pathname}` });
    }
  }
}

const HEALTH_PATHS = new Set(['/healthz', '/health', '/readyz']);

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body, null, 2);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}
