import { readFileSync } from 'node:fs';
import {
  credentials,
  Metadata,
  type ChannelCredentials,
  type ChannelOptions,
  type ClientDuplexStream,
} from '@grpc/grpc-js';
import { realClock, sleep, type Clock, type ClockTimer } from '../shared/clock.js';
import type { Logger } from '../shared/logging.js';
import {
  AgentServiceClient,
  type AccountsChanged,
  type AccountsUpdate,
  type AccountsUpdateResult,
  type AgentMessage,
  type Hello,
  type Operation,
  type ServerMessage,
  type Welcome,
} from '../shared/proto.js';
import { Backoff } from './backoff.js';
import type { AgentConfig } from './config.js';
import type { AgentMetrics } from './metrics.js';
import type { SendQueue } from './send-queue.js';
import { afterStreamEnd, heartbeatDue, heartbeatIntervalMs, reconnectBackoff } from './stream-step.js';

export type StreamState = 'idle' | 'connecting' | 'connected' | 'backoff' | 'stopped';

export interface StreamClientDeps {
  logger: Logger;
  metrics: AgentMetrics;
  queue: SendQueue;
  /** The current server settings (re-read at every dial, so a config reload applies on the next one). */
  server(): AgentConfig['server'];
  hello(): Promise<Hello>;
  /**
   * The bearer token of server.tokenFile, read at every dial (a rotated one applies on the next); without this,
   * the file is read as is. The agent brings one that also reads secret references.
   */
  bearerToken?(): Promise<string | undefined>;
  /** The server answered Hello: start the accepted accounts' watches. */
  onWelcome(welcome: Welcome): void;
  /** The stream is gone: stop the watches (they restart from the next Welcome's resume points). */
  onClosed(): Promise<void>;
  /** The server assigned or withdrew dynamic accounts. */
  onAccountsChanged?(message: AccountsChanged): void;
  /**
   * An operation to run (operations.ts), with the session (Welcome.session_id) of the stream it came on; its
   * OperationResult goes back through sendControl.
   */
  onOperation?(operation: Operation, sessionId: string): void;
  /** ServerMessage.cancel: stop that operation if none of its writes went out (operations.ts). */
  onCancel?(operationId: string, reason: string): void;
  /** Time and randomness (reconnect jitter): real ones unless a test brings its own. */
  clock?: Clock;
  random?: () => number;
}

/** How long the server may take to answer Hello before the attempt counts as failed. */
const WELCOME_TIMEOUT_MS = 30_000;

/**
 * The one outbound gRPC stream: Hello → Welcome, then data messages from the send queue and Acks back, with
 * heartbeats while idle. Any failure closes the stream, stops the watches and dials again with exponential
 * backoff (1 s × 1.6, jitter 0.2, max 120 s by default).
 */
export class StreamClient {
  state: StreamState = 'idle';
  lastError: string | undefined;
  welcome: Welcome | undefined;
  connectedAt: number | undefined;

  private readonly abort = new AbortController();
  private call: ClientDuplexStream<AgentMessage, ServerMessage> | undefined;
  private restartRequested = false;
  private running: Promise<void> | undefined;
  private lastWrite = 0;
  /** AccountsUpdates sent on the current stream, answered in order; undefined when the stream ends first. */
  private pendingUpdates: ((result: AccountsUpdateResult | undefined) => void)[] = [];
  private readonly clock: Clock;

  constructor(private readonly deps: StreamClientDeps) {
    this.clock = deps.clock ?? realClock;
  }

  start(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.call?.cancel();
    await this.running;
    this.state = 'stopped';
  }

  /** Ends the current stream and dials again at once (new Hello), e.g. after the account list changed. */
  restart(reason: string): void {
    this.deps.logger.info({ reason }, 'restarting the stream');
    this.restartRequested = true;
    this.call?.cancel();
  }

  get connected(): boolean {
    return this.state === 'connected';
  }

  /**
   * Adds, changes or removes accounts on the current stream (no new Hello). Resolves with the server's verdicts
   * and resume points, or undefined when there is no stream or it ends first (the next Hello then announces all).
   */
  updateAccounts(update: AccountsUpdate): Promise<AccountsUpdateResult | undefined> {
    if (this.state !== 'connected' || !this.call) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.pendingUpdates.push(resolve);
      this.sendControl({ accountsUpdate: update });
    });
  }

  /** Non-data messages (AccountStatus, OperationResult): written directly, outside the ack window. */
  sendControl(message: AgentMessage): void {
    if (this.state !== 'connected' || !this.call) return;
    this.lastWrite = this.clock.now();
    this.call.write(message);
  }

  private async loop(): Promise<void> {
    const log = this.deps.logger;
    let backoff = this.newBackoff();
    while (!this.abort.signal.aborted) {
      let welcomed = false;
      try {
        this.state = 'connecting';
        welcomed = await this.runOnce();
      } catch (e) {
        this.lastError = (e as Error).message;
      }
      this.deps.metrics.connected.set(0);
      this.deps.queue.detach();
      await this.deps.onClosed();
      this.welcome = undefined;
      this.connectedAt = undefined;
      const step = afterStreamEnd({
        aborted: this.abort.signal.aborted,
        restartRequested: this.restartRequested,
        welcomed,
      });
      this.restartRequested = false;
      if (step.next === 'stop') break;
      if (step.next === 'redial-now') continue;
      if (step.countReconnect) this.deps.metrics.reconnects.inc();
      if (step.resetBackoff) backoff = this.newBackoff();
      const delay = backoff.next();
      log.warn(
        { error: this.lastError, retryInMs: delay },
        welcomed ? 'stream to plugin-server lost; reconnecting' : 'cannot connect to plugin-server; retrying',
      );
      this.state = 'backoff';
      await sleep(delay, this.abort.signal, this.clock);
    }
    this.state = 'stopped';
  }

  private newBackoff(): Backoff {
    return new Backoff(reconnectBackoff(this.deps.server().backoff), this.deps.random);
  }

  /** One stream from dial to end. Resolves true when it got as far as a Welcome. */
  private async runOnce(): Promise<boolean> {
    const server = this.deps.server();
    const log = this.deps.logger;
    const { creds, options } = channelSetup(server);
    const client = new AgentServiceClient(server.address, creds, options);
    const metadata = new Metadata();
    const token = this.deps.bearerToken
      ? await this.deps.bearerToken()
      : server.tokenFile && readFileSync(server.tokenFile, 'utf8').trim();
    if (token) metadata.set('authorization', `Bearer ${token}`);
    const hello = await this.deps.hello();
    log.info({ address: server.address, accounts: hello.accounts.map((a) => a.name) }, 'connecting to plugin-server');
    const call = client.connect(metadata);
    this.call = call;
    let stopHeartbeat: (() => void) | undefined;
    let welcomed = false;
    const clock = this.clock;
    try {
      return await new Promise<boolean>((resolve, reject) => {
        const welcomeTimer = clock.setTimeout(() => {
          reject(new Error(`no Welcome within ${WELCOME_TIMEOUT_MS} ms`));
          call.cancel();
        }, WELCOME_TIMEOUT_MS);
        call.on('data', (msg: ServerMessage) => {
          if (!welcomed) {
            if (!msg.welcome) {
              reject(new Error('first server message was not a Welcome'));
              call.cancel();
              return;
            }
            clock.clearTimeout(welcomeTimer);
            welcomed = true;
            stopHeartbeat = this.onWelcome(call, msg.welcome);
            return;
          }
          if (msg.ack) this.deps.queue.ack(msg.ack.seq);
          else if (msg.operation) {
            if (this.deps.onOperation) this.deps.onOperation(msg.operation, this.welcome?.sessionId ?? '');
            else this.refuseOperation(msg.operation.operationId);
          } else if (msg.cancel) this.deps.onCancel?.(msg.cancel.operationId, msg.cancel.reason);
          else if (msg.accountsChanged) this.deps.onAccountsChanged?.(msg.accountsChanged);
          else if (msg.accountsUpdateResult) this.pendingUpdates.shift()?.(msg.accountsUpdateResult);
        });
        call.on('error', (err: Error) => {
          clock.clearTimeout(welcomeTimer);
          this.lastError = err.message;
          if (welcomed) resolve(true);
          else reject(err);
        });
        call.on('end', () => {
          clock.clearTimeout(welcomeTimer);
          this.lastError ??= 'server ended the stream';
          if (welcomed) resolve(true);
          else reject(new Error('server ended the stream before Welcome'));
        });
        call.write({ hello });
        this.lastWrite = clock.now();
      });
    } finally {
      stopHeartbeat?.();
      this.call = undefined;
      for (const resolve of this.pendingUpdates.splice(0)) resolve(undefined);
      call.cancel();
      client.close();
    }
  }

  private onWelcome(call: ClientDuplexStream<AgentMessage, ServerMessage>, welcome: Welcome): (() => void) | undefined {
    const server = this.deps.server();
    this.welcome = welcome;
    this.state = 'connected';
    this.connectedAt = this.clock.now();
    this.lastError = undefined;
    this.deps.metrics.connected.set(1);
    this.deps.logger.info(
      {
        sessionId: welcome.sessionId,
        accepted: welcome.acceptedAccounts,
        rejected: welcome.rejectedAccounts,
        resumePoints: welcome.resumePoints.length,
      },
      'connected to plugin-server',
    );
    for (const r of welcome.rejectedAccounts) {
      this.deps.logger.error({ account: r.name, reason: r.reason }, 'account rejected by plugin-server');
    }
    this.deps.queue.attach(
      {
        write: (m) => {
          this.lastWrite = this.clock.now();
          return call.write(m);
        },
        onDrain: (fn) => call.on('drain', fn),
      },
      { window: welcome.maxUnackedBytes, maxMessageBytes: welcome.maxMessageBytes },
    );
    this.deps.onWelcome(welcome);
    const intervalMs = heartbeatIntervalMs(server.heartbeatSeconds, welcome.heartbeatIntervalSeconds);
    if (intervalMs === undefined) return undefined;
    const clock = this.clock;
    let timer: ClockTimer | undefined;
    const check = (): void => {
      if (heartbeatDue(clock.now(), this.lastWrite, intervalMs)) {
        this.lastWrite = clock.now();
        call.write({ heartbeat: { sentAtMs: Date.now() } });
      }
      timer = clock.setTimeout(check, intervalMs / 2);
    };
    timer = clock.setTimeout(check, intervalMs / 2);
    return () => clock.clearTimeout(timer);
  }

  // Without an operation runner each operation gets an explicit failure, never silence.
  private refuseOperation(operationId: string): void {
    this.sendControl({
      operationResult: {
        operationId,
        ok: false,
        error: 'this agent does not execute operations yet',
        resultJson: Buffer.alloc(0),
        resourceVersions: {},
      },
    });
  }
}

function channelSetup(server: AgentConfig['server']): { creds: ChannelCredentials; options: ChannelOptions } {
  const options: ChannelOptions = {
    // A dead peer behind a load balancer is noticed within ~80 s even when no data flows.
    'grpc.keepalive_time_ms': 60_000,
    'grpc.keepalive_timeout_ms': 20_000,
    'grpc.max_send_message_length': 64 * 1024 * 1024,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    // We reconnect ourselves, with our own backoff.
    'grpc.enable_retries': 0,
  };
  if (server.insecure) return { creds: credentials.createInsecure(), options };
  const tls = server.tls ?? {};
  if (tls.serverName) {
    options['grpc.ssl_target_name_override'] = tls.serverName;
    options['grpc.default_authority'] = tls.serverName;
  }
  const read = (f: string | undefined): Buffer | null => (f ? readFileSync(f) : null);
  return { creds: credentials.createSsl(read(tls.caFile), read(tls.keyFile), read(tls.certFile)), options };
}
