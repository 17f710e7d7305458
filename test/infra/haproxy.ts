import { existsSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './ports.js';
import { ServerProcess } from './processes-group.js';

/** A backend: one plugin-server replica's gRPC and REST ports. */
export interface HaproxyBackend {
  name: string;
  grpcPort: number;
  httpPort: number;
}

function findHaproxy(): string {
  for (const dir of ['/usr/sbin', '/usr/bin', '/usr/local/sbin', '/usr/local/bin']) {
    if (existsSync(join(dir, 'haproxy'))) return join(dir, 'haproxy');
  }
  throw new Error("haproxy not found; run scripts/test-deps.sh (installs it from Debian's packages)");
}

/**
 * HAProxy (Debian's package) as the load balancer in front of plugin-server replicas, as a Service or an ingress
 * would be: gRPC in TCP mode (each agent stream lands on one replica, round-robin) and REST in HTTP mode
 * (round-robin per request). Both check each replica's /readyz, so a replica that is killed, stopping or not ready
 * gets no new connections; established streams are left alone (as a Kubernetes Service does), so a replica that
 * must shed its agents has to close their streams itself.
 */
export class Haproxy {
  private constructor(
    private readonly proc: ServerProcess,
    readonly grpcPort: number,
    readonly httpPort: number,
  ) {}

  get grpcAddress(): string {
    return `127.0.0.1:${this.grpcPort}`;
  }

  get httpBase(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  static async start(opts: { dir: string; backends: HaproxyBackend[] }): Promise<Haproxy> {
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const servers = (port: (b: HaproxyBackend) => string) =>
      opts.backends.map((b) => `  server ${b.name} 127.0.0.1:${port(b)}`).join('\n');
    const config = `global
  maxconn 4096
defaults
  timeout connect 1s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
  default-server check inter 300ms fall 2 rise 1
frontend grpc
  mode tcp
  bind 127.0.0.1:${grpcPort}
  default_backend grpc
backend grpc
  mode tcp
  balance roundrobin
  option httpchk GET /readyz
${opts.backends.map((b) => `  server ${b.name} 127.0.0.1:${b.grpcPort} port ${b.httpPort}`).join('\n')}
frontend http
  mode http
  bind 127.0.0.1:${httpPort}
  default_backend http
backend http
  mode http
  balance roundrobin
  option httpchk GET /readyz
  retry-on conn-failure empty-response
  retries 3
  option redispatch
${servers((b) => String(b.httpPort))}
`;
    const file = join(opts.dir, 'haproxy.cfg');
    writeFileSync(file, config);
    const proc = ServerProcess.start('haproxy', findHaproxy(), ['-db', '-f', file], join(opts.dir, 'haproxy.log'));
    const h = new Haproxy(proc, grpcPort, httpPort);
    await h.waitListening();
    return h;
  }

  private async waitListening(): Promise<void> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      this.proc.assertRunning();
      const ok = await new Promise<boolean>((resolve) => {
        const s = connect(this.httpPort, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`haproxy not listening within 15 s:\n${this.proc.logTail()}`);
      await sleep(50);
    }
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }
}
