/**
 * The runtimes as real processes: `scale-agent plugin-server` and `scale-agent agent`, each with its own config
 * file, log file and loopback ports, started through the real CLI and awaited until ready (/readyz).
 *
 * By default the CLI runs from source (tsx), so tests need no build; SCALE_AGENT_TEST_USE_DIST=1 runs the built
 * `bin/run.js` instead (what CI does after `npm run build`).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { freePort } from './ports.js';
import { ServerProcess } from './processes-group.js';

const ROOT = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/** The scale-agent CLI with `args`, from source or (SCALE_AGENT_TEST_USE_DIST=1) from the build. */
export function cliCommand(args: string[]): { cmd: string; args: string[] } {
  if (process.env.SCALE_AGENT_TEST_USE_DIST === '1')
    return { cmd: process.execPath, args: [join(ROOT, 'bin/run.js'), ...args] };
  return { cmd: process.execPath, args: ['--import', 'tsx', join(ROOT, 'test/infra/cli-entry.ts'), ...args] };
}

async function waitReady(
  proc: ServerProcess,
  url: string,
  timeoutMs: number,
  what: string,
  diagnostics: string[] = [],
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < deadline) {
    proc.assertRunning();
    try {
      const res = await fetch(url);
      if (res.ok) return;
      last = `${res.status} ${await res.text()}`;
    } catch (e) {
      last = (e as Error).message;
    }
    await sleep(50);
  }
  // What the process says about itself (an agent's /watches and /accounts) makes a hang diagnosable.
  let extra = '';
  for (const d of diagnostics) {
    try {
      const res = await fetch(d);
      extra += `\n${d}: ${res.status} ${await res.text()}`;
    } catch (e) {
      extra += `\n${d}: ${(e as Error).message}`;
    }
  }
  throw new Error(`${what} not ready within ${timeoutMs} ms (${url}: ${last});${extra}\nlog tail:\n${proc.logTail()}`);
}

/** GET `url`; the status and the body parsed as JSON (undefined when empty). */
export function getJson<T = unknown>(url: string): Promise<{ status: number; body: T }> {
  return sendJson<T>(url, 'GET');
}

/** `method` on `url` with `body` as JSON when there is one; the status and the body parsed as JSON (or undefined). */
export async function sendJson<T = unknown>(
  url: string,
  method: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

export type StorageSpec = { type: 'memory' } | { type: 'mysql' | 'postgres'; url: string };

export interface PluginServerOptions {
  dir: string;
  storage?: StorageSpec;
  gracePeriodSeconds?: number;
  /** Extra top-level config merged in (e.g. limits). */
  extra?: Record<string, unknown>;
  name?: string;
  /** Added to the server's environment, on every (re)start (a skewed clock: test/infra/schedules/faketime.ts). */
  env?: Record<string, string>;
}

/**
 * The peer secret replicas started in `dir` share (http.peerAuth.secretFile), as `scale-agent synth` generates one
 * per install: written once, so every replica of a test holds the same.
 */
export function peerSecretFile(dir: string): string {
  const file = join(dir, 'peer-secret');
  if (!existsSync(file)) writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 });
  return file;
}

/** A plugin-server process. restart() keeps ports, config and log file (a crash or a rolling restart). */
export class PluginServerProcess {
  proc!: ServerProcess;

  private constructor(
    readonly configFile: string,
    readonly logFile: string,
    readonly grpcPort: number,
    readonly httpPort: number,
    private readonly name: string,
    private readonly env: Record<string, string> = {},
  ) {}

  get grpcAddress(): string {
    return `127.0.0.1:${this.grpcPort}`;
  }

  get httpBase(): string {
    return `http://127.0.0.1:${this.httpPort}`;
  }

  static async start(opts: PluginServerOptions): Promise<PluginServerProcess> {
    // A port free when chosen can be taken before the server binds it (ports.ts); then it starts again on others.
    for (let attempt = 1; ; attempt++) {
      try {
        return await PluginServerProcess.startOnce(opts);
      } catch (e) {
        if (attempt >= 3 || !String((e as Error).message).includes('EADDRINUSE')) throw e;
      }
    }
  }

  private static async startOnce(opts: PluginServerOptions): Promise<PluginServerProcess> {
    mkdirSync(opts.dir, { recursive: true });
    const name = opts.name ?? 'plugin-server';
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    // grpc and http from `extra` are merged into the defaults (so tls or auth can be added and the ports stay known).
    const { grpc, http, ...rest } = (opts.extra ?? {}) as { grpc?: object; http?: object };
    // Replicas sharing a store authenticate each other with a secret, as an install's do.
    const peerAuth =
      opts.storage && opts.storage.type !== 'memory' ? { peerAuth: { secretFile: peerSecretFile(opts.dir) } } : {};
    const config = {
      grpc: { host: '127.0.0.1', port: grpcPort, ...grpc },
      http: { host: '127.0.0.1', port: httpPort, ...peerAuth, ...http },
      storage: opts.storage ?? { type: 'memory' },
      accounts: { gracePeriodSeconds: opts.gracePeriodSeconds ?? 600 },
      logLevel: 'debug',
      ...rest,
    };
    const configFile = join(opts.dir, `${name}.yaml`);
    writeFileSync(configFile, stringify(config));
    const p = new PluginServerProcess(configFile, join(opts.dir, `${name}.log`), grpcPort, httpPort, name, opts.env);
    await p.launch();
    return p;
  }

  private async launch(): Promise<void> {
    const { cmd, args } = cliCommand(['plugin-server', '--config', this.configFile]);
    this.proc = ServerProcess.start(this.name, cmd, args, this.logFile, { ...process.env, ...this.env });
    await waitReady(this.proc, `${this.httpBase}/readyz`, 60_000, this.name);
  }

  async restart(): Promise<void> {
    await this.proc.stop();
    await this.launch();
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }

  async kill(): Promise<void> {
    await this.proc.kill();
  }

  get<T = unknown>(path: string): Promise<{ status: number; body: T }> {
    return getJson<T>(this.httpBase + path);
  }

  /** Value of a counter/gauge sample in /metrics (0 when absent). */
  async metric(sample: string): Promise<number> {
    const text = await (await fetch(`${this.httpBase}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
    return line ? Number(line.slice(sample.length + 1)) : 0;
  }
}

export interface AgentAccountSpec {
  name: string;
  kubeconfigFile: string;
  context?: string;
  namespaces?: string[];
  omitNamespaces?: string[];
  kinds?: string[];
  omitKinds?: string[];
  permissions?: { READ?: string[]; WRITE?: string[] };
  onlySpinnakerManaged?: boolean;
  cacheAllApplicationRelationships?: boolean;
}

export interface AgentOptions {
  dir: string;
  serverAddress: string;
  accounts: AgentAccountSpec[];
  agentId?: string;
  extra?: Record<string, unknown>;
  /** Wait for /readyz (connected and every accepted account synced). Default true. */
  waitReady?: boolean;
  /** Added to the agent's environment (an allocator, NODE_OPTIONS), on every (re)start. */
  env?: Record<string, string>;
  /**
   * Tests run the agent with debug logs and re-read discovery every 5 s (a new CRD shows soon). Benchmarks pass
   * `asInstalled`: the defaults a generated install runs with (the agent's own log level and discovery period).
   */
  asInstalled?: boolean;
}

/** An agent process; writeAccounts() rewrites its config file atomically (the agent reloads it). */
export class AgentProcess {
  proc!: ServerProcess;
  private config: Record<string, unknown>;

  private constructor(
    readonly configFile: string,
    readonly logFile: string,
    readonly adminPort: number,
    private readonly name: string,
    config: Record<string, unknown>,
    private readonly env: Record<string, string> = {},
  ) {
    this.config = config;
  }

  get adminBase(): string {
    return `http://127.0.0.1:${this.adminPort}`;
  }

  static async start(opts: AgentOptions): Promise<AgentProcess> {
    mkdirSync(opts.dir, { recursive: true });
    const agentId = opts.agentId ?? 'agent-1';
    const adminPort = await freePort();
    const config = {
      server: {
        address: opts.serverAddress,
        insecure: true,
        heartbeatSeconds: 5,
        backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 2 },
      },
      agentId,
      admin: { host: '127.0.0.1', port: adminPort },
      kubernetes: { accounts: opts.accounts, ...(opts.asInstalled ? {} : { rediscoverySeconds: 5 }) },
      ...opts.extra,
    };
    const configFile = join(opts.dir, `${agentId}.yaml`);
    writeFileSync(configFile, stringify(config));
    const env = { ...(opts.asInstalled ? {} : { SCALE_AGENT_LOG_LEVEL: 'debug' }), ...opts.env };
    const a = new AgentProcess(configFile, join(opts.dir, `${agentId}.log`), adminPort, agentId, config, env);
    await a.launch(opts.waitReady ?? true);
    return a;
  }

  private async launch(wait: boolean): Promise<void> {
    const { cmd, args } = cliCommand(['agent', '--config', this.configFile]);
    this.proc = ServerProcess.start(this.name, cmd, args, this.logFile, {
      ...process.env,
      ...this.env,
    });
    if (wait) await this.waitReady();
  }

  waitReady(timeoutMs = 90_000): Promise<void> {
    return waitReady(this.proc, `${this.adminBase}/readyz`, timeoutMs, this.name, [
      `${this.adminBase}/watches`,
      `${this.adminBase}/accounts`,
    ]);
  }

  async restart(wait = true): Promise<void> {
    await this.proc.stop();
    await this.launch(wait);
  }

  async stop(): Promise<void> {
    await this.proc.stop();
  }

  async kill(): Promise<void> {
    await this.proc.kill();
  }

  /** Rewrites the account list (write to a temp file and rename, as editors and ConfigMap updates do). */
  writeAccounts(accounts: AgentAccountSpec[]): void {
    const kubernetes = { ...(this.config.kubernetes as object), accounts };
    this.config = { ...this.config, kubernetes };
    const tmp = `${this.configFile}.tmp`;
    writeFileSync(tmp, stringify(this.config));
    // rename is atomic: the watcher never sees a half-written file.
    renameSync(tmp, this.configFile);
  }

  async metric(sample: string): Promise<number> {
    const text = await (await fetch(`${this.adminBase}/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${sample} `));
    return line ? Number(line.slice(sample.length + 1)) : 0;
  }
}
