/**
 * One agent stream, as a protocol adapter: Hello → Welcome, heartbeats both ways, dispatch of each message to the
 * module that handles it, and close. What an agent's messages must look like is ingest/wire.ts; their ordered way
 * into the store (check → batch → store → ack, with backpressure) is ingest/pipeline.ts; which offered accounts
 * the stream may hold is registration.ts.
 */
import { randomUUID } from 'node:crypto';
import { status as GrpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import { ScaleAgentError } from '../shared/errors.js';
import type { Logger } from '../shared/logging.js';
import {
  AccountState as ProtoAccountState,
  type AccountsChanged,
  type AccountsUpdate,
  type AgentMessage,
  type Hello,
  type Operation,
  type OperationResult,
  type ServerMessage,
} from '../shared/proto.js';
import type { AccountRegistry } from './accounts.js';
import { ANONYMOUS, type Identity } from './auth/identity.js';
import { indexOptionsOf } from './cache/store.js';
import type { ObjectCache } from './cache/store.js';
import type { CheckPool } from './ingest/check-pool.js';
import { IngestPipeline } from './ingest/pipeline.js';
import { messageType, ProtocolError, validateAccounts, validateHello } from './ingest/wire.js';
import type { PluginServerConfig } from './config.js';
import type { PluginServerMetrics } from './metrics.js';
import { LeaseLost } from './ownership.js';
import { StreamRegistration, type RefusalCode } from './registration.js';
import type { GatedSession, SessionGate } from './session-gate.js';

export interface SessionDeps {
  store: Pick<ObjectCache, 'type' | 'apply' | 'resumePoints' | 'indexes'>;
  accounts: AccountRegistry;
  metrics: PluginServerMetrics;
  log: Logger;
  limits: PluginServerConfig['limits'];
  /** The kind policy sent to agents in Welcome (undefined: none). */
  kindPolicy?: { cacheKinds: string[]; cacheOmitKinds: string[] };
  serverVersion: string;
  /** Authorization and dynamic accounts; without one every registration is decided by the registry alone. */
  gate?: SessionGate | undefined;
  /**
   * Front mode: why a name may not be an agent account because the upstream Clouddriver has an account of that
   * name (upstream/accounts.ts), or undefined.
   */
  upstreamClash?: ((name: string) => string | undefined) | undefined;
  /** Results of operations sent with sendOperation() (ops/dispatcher.ts). */
  onOperationResult?: ((sessionId: string, result: OperationResult) => void) | undefined;
  /** Threads that check large batches' objects; without one every object is checked on the event loop. */
  checkPool?: CheckPool | undefined;
}

/** What /armory/agents shows about one stream. */
export interface SessionInfo {
  sessionId: string;
  agentId: string;
  version: string;
  zone: string;
  identity: Record<string, string>;
  peer: string;
  /** Subject of the agent's client certificate (mTLS), when there is one. */
  certificateSubject?: string | undefined;
  /** The identity the server authorized with (certificate SAN/subject, token name, or anonymous). */
  authIdentity: string;
  /** Accounts refused on this stream, with the reason the agent was given. */
  rejectedAccounts: { name: string; reason: string }[];
  connectedAt: number;
  lastMessageAt: number;
  accounts: string[];
  ackedSeq: number;
  pendingBytes: number;
}

type Call = ServerDuplexStream<AgentMessage, ServerMessage>;

export class AgentSession implements GatedSession {
  readonly id = randomUUID();
  readonly identity: Identity;
  private hello: Hello | undefined;
  /** Hello was received (Welcome may still be on its way: it waits for the registrations). */
  private helloReceived = false;
  private welcomed = false;
  private readonly beforeWelcome: ServerMessage[] = [];
  private closed = false;
  private readonly connectedAt = Date.now();
  private lastMessageAt = Date.now();
  private lastHeartbeatSent = Date.now();
  private readonly timer: NodeJS.Timeout;
  private readonly log: Logger;
  private readonly certificateSubject: string | undefined;
  private readonly ingest: IngestPipeline;
  private readonly registration: StreamRegistration;

  constructor(
    private readonly call: Call,
    private readonly deps: SessionDeps,
    private readonly onClosed: (s: AgentSession) => void,
  ) {
    this.log = deps.log.child({ sessionId: this.id, peer: call.getPeer() });
    this.certificateSubject = peerSubject(call);
    this.identity = deps.gate?.identify(call as ServerDuplexStream<unknown, unknown>) ?? ANONYMOUS;
    this.registration = new StreamRegistration({ ...deps, log: this.log }, this);
    this.ingest = new IngestPipeline({
      store: deps.store,
      metrics: deps.metrics,
      limits: deps.limits,
      sessionId: this.id,
      holds: (account) => deps.accounts.holds(this.id, account),
      // Replicas share only a SQL store (MySQL, PostgreSQL): there every write is fenced by its accounts' leases, so a
      // stream whose replica was paused past its lease cannot write over its successor's. One replica (memory) has
      // nothing to fence.
      fence: deps.store.type !== 'memory' ? (accounts) => deps.accounts.writeFence(this.id, accounts) : undefined,
      indexOptions: (account) => indexOptionsOf(deps.accounts.get(account)?.record),
      checkPool: deps.checkPool,
      pause: () => call.pause(),
      resume: () => call.resume(),
      ack: (seq) => this.send({ ack: { seq } }),
      failed: (e) => {
        // The store refused a write under a lost lease: the registry tells (closes) this stream, naming the account.
        if (e instanceof LeaseLost) deps.accounts.writeRefused(this.id, e.accounts);
        this.close(
          e,
          e instanceof ProtocolError ? 'protocol_error' : e instanceof LeaseLost ? 'lease_lost' : 'store_error',
        );
      },
    });
    call.on('data', (m: AgentMessage) => this.onMessage(m));
    call.on('end', () => this.close(undefined, 'agent_closed'));
    call.on('error', (e: Error) => this.cleanup(`stream_error: ${e.message}`));
    call.on('cancelled', () => this.cleanup('cancelled'));
    call.on('close', () => this.cleanup('closed'));
    const heartbeatMs = deps.limits.heartbeatIntervalSeconds * 1000;
    this.timer = setInterval(() => this.tick(), Math.min(heartbeatMs, 5000));
    this.timer.unref();
    deps.metrics.sessionsOpened.inc();
    deps.metrics.sessions.inc();
  }

  info(): SessionInfo {
    return {
      sessionId: this.id,
      agentId: this.hello?.agentId ?? '',
      version: this.hello?.version ?? '',
      zone: this.hello?.zone ?? '',
      identity: { ...(this.hello?.identity ?? {}) },
      peer: this.call.getPeer(),
      certificateSubject: this.certificateSubject,
      authIdentity: this.identity.name,
      rejectedAccounts: this.registration.refusals().map(({ name, reason }) => ({ name, reason })),
      connectedAt: this.connectedAt,
      lastMessageAt: this.lastMessageAt,
      accounts: this.deps.accounts
        .list()
        .filter((a) => a.sessionId === this.id)
        .map((a) => a.record.name),
      ackedSeq: this.ingest.ackedSeq,
      pendingBytes: this.ingest.pendingBytes,
    };
  }

  get agentId(): string {
    return this.hello?.agentId ?? '';
  }

  get zone(): string {
    return this.hello?.zone ?? '';
  }

  /** The agent shares its group's accounts with the group's other agents (Hello.share_load). */
  get shareLoad(): boolean {
    return this.hello?.shareLoad ?? false;
  }

  get open(): boolean {
    return !this.closed;
  }

  /** Accounts this stream offered while another agent of its group held them (promoted by reconnecting). */
  get standbyFor(): ReadonlySet<string> {
    return this.registration.standbyFor;
  }

  /** Why the account was last refused on this stream (registration.ts); undefined when it was not. */
  refusedAs(name: string): RefusalCode | undefined {
    return this.registration.refusedAs(name);
  }

  /** An operation for the agent (ops/dispatcher.ts); held back until Welcome, which must be the first message. */
  sendOperation(op: Operation): void {
    if (this.welcomed) this.send({ operation: op });
    else this.beforeWelcome.push({ operation: op });
  }

  /** Asks the agent to stop an operation sent with sendOperation() (proto Cancel); after it, as the stream is ordered. */
  sendCancel(operationId: string, reason: string): void {
    if (this.welcomed) this.send({ cancel: { operationId, reason } });
    else this.beforeWelcome.push({ cancel: { operationId, reason } });
  }

  /** Dynamic accounts for the agent to add or drop (accounts/dynamic.ts). */
  sendAccountsChanged(message: AccountsChanged): void {
    this.send({ accountsChanged: message });
  }

  private tick(): void {
    const now = Date.now();
    const idleSeconds = this.deps.limits.sessionIdleTimeoutSeconds;
    if (now - this.lastMessageAt > idleSeconds * 1000) {
      this.close(new ProtocolError(`no message for ${idleSeconds}s`, GrpcStatus.DEADLINE_EXCEEDED), 'idle');
      return;
    }
    if (this.hello && now - this.lastHeartbeatSent >= this.deps.limits.heartbeatIntervalSeconds * 1000) {
      this.send({ heartbeat: { sentAtMs: now } });
    }
  }

  private send(msg: ServerMessage): void {
    if (this.closed) return;
    if (msg.heartbeat) this.lastHeartbeatSent = Date.now();
    this.call.write(msg);
  }

  private onMessage(m: AgentMessage): void {
    if (this.closed) return;
    this.lastMessageAt = Date.now();
    try {
      this.dispatch(m);
    } catch (e) {
      this.close(e, 'protocol_error');
    }
  }

  private dispatch(m: AgentMessage): void {
    const type = messageType(m);
    this.deps.metrics.messagesReceived.inc({ type });
    if (!this.helloReceived) {
      if (!m.hello) throw new ProtocolError(`first message must be hello, got ${type}`, GrpcStatus.FAILED_PRECONDITION);
      const hello = m.hello;
      validateHello(hello, this.deps.limits.maxAccountsPerAgent);
      this.helloReceived = true;
      this.ingest.control(() => this.welcome(hello));
      return;
    }
    if (m.hello) throw new ProtocolError('hello sent twice on one stream', GrpcStatus.FAILED_PRECONDITION);
    if (m.heartbeat) {
      this.send({ heartbeat: { sentAtMs: Date.now() } });
    } else if (m.accountStatus) {
      const s = m.accountStatus;
      this.deps.gate?.status(this, s);
      this.deps.accounts.report(this.id, s.account, {
        state: s.state === ProtoAccountState.ACCOUNT_STATE_FAILED ? 'FAILED' : 'ACTIVE',
        error: s.error.slice(0, 4096),
        forbiddenKinds: s.forbiddenKinds.slice(0, 10_000),
        kinds: s.kinds.slice(0, 10_000),
      });
    } else if (m.operationResult) {
      this.deps.onOperationResult?.(this.id, m.operationResult);
    } else if (m.accountsUpdate) {
      const update = m.accountsUpdate;
      validateAccounts(update.added, this.deps.limits.maxAccountsPerAgent);
      this.ingest.control(() => this.accountsUpdate(update));
    } else if (m.changeBatch) {
      this.ingest.changes(m.changeBatch);
    } else {
      this.ingest.scoped(m);
    }
  }

  private async welcome(hello: Hello): Promise<void> {
    this.hello = hello;
    const { accepted, rejected, resumePoints } = await this.registration.offer(hello.accounts);
    this.log.info(
      { agentId: hello.agentId, version: hello.version, accepted, rejected: rejected.map((r) => r.name) },
      'agent connected',
    );
    this.send({
      welcome: {
        sessionId: this.id,
        serverVersion: this.deps.serverVersion,
        acceptedAccounts: accepted,
        rejectedAccounts: rejected,
        resumePoints,
        maxUnackedBytes: this.deps.limits.maxUnackedBytes,
        maxMessageBytes: this.deps.limits.maxMessageBytes,
        heartbeatIntervalSeconds: this.deps.limits.heartbeatIntervalSeconds,
        cacheKinds: this.deps.kindPolicy?.cacheKinds ?? [],
        cacheOmitKinds: this.deps.kindPolicy?.cacheOmitKinds ?? [],
      },
    });
    this.welcomed = true;
    for (const m of this.beforeWelcome.splice(0)) this.send(m);
    this.deps.gate?.welcomed(this);
  }

  private async accountsUpdate(update: AccountsUpdate): Promise<void> {
    const removed: string[] = [];
    for (const name of update.removed) {
      if (await this.deps.accounts.remove(this.id, name)) removed.push(name);
    }
    const handedOver: { name: string; reason: string }[] = [];
    for (const name of update.handedOver) {
      // Standby once released: the release promotes the account's other standbys, not this stream again.
      await this.deps.accounts.handOver(this.id, name);
      handedOver.push(this.registration.handedOver(name));
    }
    const { accepted, rejected: refused, resumePoints } = await this.registration.offer(update.added);
    const rejected = [...handedOver, ...refused];
    this.log.info({ accepted, rejected: rejected.map((r) => r.name), removed }, 'agent accounts updated');
    this.send({
      accountsUpdateResult: {
        acceptedAccounts: accepted,
        rejectedAccounts: rejected,
        resumePoints,
        removedAccounts: removed,
      },
    });
  }

  /** Ends the stream: OK when `error` is undefined, else a gRPC status that tells the agent why. */
  close(error: unknown, reason: string): void {
    if (this.closed) return;
    if (error === undefined) {
      this.call.end();
    } else {
      const code =
        error instanceof ProtocolError
          ? error.grpcCode
          : error instanceof ScaleAgentError && error.kind === 'UNAVAILABLE'
            ? GrpcStatus.UNAVAILABLE
            : GrpcStatus.INTERNAL;
      const details = error instanceof Error ? error.message : String(error);
      this.log.warn({ reason, details, agentId: this.agentId }, 'closing agent stream');
      this.call.emit('error', { code, details, name: 'SessionClosed', message: details });
    }
    this.cleanup(reason);
  }

  private cleanup(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.ingest.stop();
    const released = this.deps.accounts.release(this.id);
    this.deps.metrics.sessions.dec();
    this.deps.metrics.sessionsClosed.inc({ reason: reason.split(':')[0] ?? reason });
    this.log.info({ reason, agentId: this.agentId, orphaned: released }, 'agent stream closed');
    this.deps.gate?.closed(this);
    this.onClosed(this);
  }
}

function peerSubject(call: Call): string | undefined {
  try {
    const cert = call.getAuthContext()?.sslPeerCertificate;
    if (!cert?.subject) return undefined;
    return Object.entries(cert.subject)
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(',');
  } catch {
    return undefined;
  }
}
