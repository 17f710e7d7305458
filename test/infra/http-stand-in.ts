/**
 * What every HTTP stand-in (for a Spinnaker service that cannot run on these machines: Fiat, Clouddriver) does the
 * same way: listen on a loopback port, come back on that same port after stop() (the service restarted), and stop
 * at once by closing the connections still open. A subclass answers the requests.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export abstract class HttpStandIn {
  private server: Server | undefined;
  private port = 0;

  get baseUrl(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  protected abstract handle(req: IncomingMessage, res: ServerResponse): void | Promise<void>;

  /** Starts listening, on the same port as before when restarted. */
  async start(): Promise<void> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    const s = this.server;
    if (!s) return;
    this.server = undefined;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
}
