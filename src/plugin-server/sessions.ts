import { randomUUID } from 'node:crypto';
import { status as GrpcStatus, type ServerDuplexStream } from '@grpc/grpc-js';
import { ScaleAgentError } from '../shared/errors.js';
import type { Logger } from '../shared/logging.js';
import {
  AccountState as ProtoAccountState,
  ChangeType,
  PROTOCOL_VERSION,
  type Account,
  type AccountsChanged,
  type AccountsUpdate,
  type AgentMessage,
  type Change,
  type Hello,
  type KindKey,
  type Operation,
  type OperationResult,
  type ResumePoint,
  type ServerMessage,
} from '../shared/proto.js';
import type { AccountRegistry } from './accounts.js';
import { ANONYMOUS, type Identity } from './auth/identity.js';
import type { CacheStore, ChangeKind, IndexKeys, ScopeKey, StoreChange, StoreOp } from './cache/store.js';
import { groupOf } from '../shared/kinds.js';
import { DEFAULT_INDEX_OPTIONS, indexOptionsOf, NO_KEYS, type IndexOptions } from './views/app-index.js';
import { CheckBatchBuilder } from './ingest/check-batch.js';
import { batchText, type BatchText } from './ingest/batch-text.js';
import type { SharedText } from './cache/shared-text.js';
import type { CheckPool } from './ingest/check-pool.js';
import { checkObject } from './ingest/object-check.js';
import type { PluginServerConfig } from './config.js';
import type { PluginServerMetrics } from './metrics.js';
import type { GatedSession, GateVerdict, SessionGate } from './session-gate.js';

export interface SessionDeps {
  store: CacheStore;
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

type DataMessage =
  | {
      kind: 'syncStart' | 'syncEnd' | 'bookmark';
      seq: number;
      scope: ScopeKey;
      version: string;
      resourceVersion: string;
    }
  | {
      kind: 'changes';
      seq: number;
      changes: StoreChange[];
      bytes: number;
      observedAtMs: number;
      /** Set while a check worker still checks the objects (check-pool.ts); the batch is not written before. */
      checking?: Promise<void> | undefined;
      /** Why the check refused the batch (the stream closes when the batch reaches the head of the queue). */
      refused?: unknown;
    };

type WorkItem = { kind: 'hello'; hello: Hello } | { kind: 'accounts'; update: AccountsUpdate } | DataMessage;

/** A protocol violation: closes this one stream with INVALID_ARGUMENT/FAILED_PRECONDITION, never the server. */
class ProtocolError extends Error {
  constructor(
    message: string,
    readonly grpcCode: GrpcStatus = GrpcStatus.INVALID_ARGUMENT,
  ) {
    super(message);
  }
}

// Kubernetes names are ASCII; anything else in a key field is a broken or hostile agent (and would poison the
// MySQL ASCII key columns, closing the stream again on every replay).
const KEY_TEXT = /^[\x21-\x7e]+$/;
const ROLE = /^\S{1,1024}$/u;
const API_VERSION = /^([a-z0-9]([a-z0-9.-]*[a-z0-9])?\/)?[a-z0-9]+$/;
const KIND = /^[A-Za-z][A-Za-z0-9]*$/;

/**
 * Batches at least this large are checked by a worker when the server has a check pool; smaller ones (a steady
 * trickle of watch events) on the event loop, where the hop to a thread would cost more latency than it saves.
 */
const POOL_MIN_CHANGES = 64;

/**
 * One agent stream: Hello → Welcome, then data messages applied to the store strictly in order and acknowledged
 * cumulatively. Consecutive data messages waiting in the queue are written as one store batch (batching costs no
 * latency: it only happens while an earlier write is in flight). When the queue holds more than the flow-control
 * window, the stream stops reading (HTTP/2 backpressure reaches the agent) until the store catches up.
 */
export class AgentSession implements GatedSession {
  readonly id = randomUUID();
  readonly identity: Identity;
  private readonly rejectedAccounts = new Map<string, string>();
  /** Accounts this stream offered while another agent of its group held them (promoted by reconnecting). */
  readonly standbyFor = new Set<string>();
  private hello: Hello | undefined;
  private readonly queue: WorkItem[] = [];
  private pendingBytes = 0;
  private draining = false;
  private paused = false;
  private closed = false;
  private lastSeq = 0;
  private ackedSeq = 0;
  private readonly connectedAt = Date.now();
  private lastMessageAt = Date.now();
  private readonly timer: NodeJS.Timeout;
  private readonly log: Logger;
  private readonly certificateSubject: string | undefined;

  constructor(
    private readonly call: Call,
    private readonly deps: SessionDeps,
    private readonly onClosed: (s: AgentSession) => void,
  ) {
    this.log = deps.log.child({ sessionId: this.id, peer: call.getPeer() });
    this.certificateSubject = peerSubject(call);
    this.identity = deps.gate?.identify(call as ServerDuplexStream<unknown, unknown>) ?? ANONYMOUS;
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
      rejectedAccounts: [...this.rejectedAccounts].map(([name, reason]) => ({ name, reason })),
      connectedAt: this.connectedAt,
      lastMessageAt: this.lastMessageAt,
      accounts: this.deps.accounts
        .list()
        .filter((a) => a.sessionId === this.id)
        .map((a) => a.record.name),
      ackedSeq: this.ackedSeq,
      pendingBytes: this.pendingBytes,
    };
  }

  get agentId(): string {
    return this.hello?.agentId ?? '';
  }

  get zone(): string {
    return this.hello?.zone ?? '';
  }

  get open(): boolean {
    return !this.closed;
  }

  private welcomed = false;
  private readonly beforeWelcome: Operation[] = [];

  /** An operation for the agent (ops/dispatcher.ts); held back until Welcome, which must be the first message. */
  sendOperation(op: Operation): void {
    if (this.welcomed) this.send({ operation: op });
    else this.beforeWelcome.push(op);
  }

  /** Dynamic accounts for the agent to add or drop (accounts/dynamic.ts). */
  sendAccountsChanged(message: AccountsChanged): void {
    this.send({ accountsChanged: message });
  }

  private lastHeartbeatSent = Date.now();

  private tick(): void {
    const now = Date.now();
    if (now - this.lastMessageAt > this.deps.limits.sessionIdleTimeoutSeconds * 1000) {
      this.close(
        new ProtocolError(
          `no message for ${this.deps.limits.sessionIdleTimeoutSeconds}s`,
          GrpcStatus.DEADLINE_EXCEEDED,
        ),
        'idle',
      );
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
      this.accept(m);
    } catch (e) {
      this.close(e, 'protocol_error');
    }
  }

  private accept(m: AgentMessage): void {
    const type = messageType(m);
    this.deps.metrics.messagesReceived.inc({ type });
    if (!this.hello && !this.queue.some((w) => w.kind === 'hello')) {
      if (!m.hello) throw new ProtocolError(`first message must be hello, got ${type}`, GrpcStatus.FAILED_PRECONDITION);
      validateHello(m.hello, this.deps.limits.maxAccountsPerAgent);
      this.enqueue({ kind: 'hello', hello: m.hello });
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
      validateAccounts(m.accountsUpdate.added, this.deps.limits.maxAccountsPerAgent);
      this.enqueue({ kind: 'accounts', update: m.accountsUpdate });
    } else {
      this.enqueue(this.dataMessage(m, type));
    }
  }

  private checkSeq(seq: number): number {
    if (!Number.isSafeInteger(seq) || seq <= this.lastSeq) {
      throw new ProtocolError(`seq ${seq} does not follow ${this.lastSeq}: data messages must carry increasing seq`);
    }
    this.lastSeq = seq;
    return seq;
  }

  private dataMessage(m: AgentMessage, type: string): DataMessage {
    if (m.changeBatch) {
      const b = m.changeBatch;
      const seq = this.checkSeq(b.seq);
      if (b.changes.length > this.deps.limits.maxChangesPerBatch) {
        throw new ProtocolError(`batch of ${b.changes.length} changes exceeds ${this.deps.limits.maxChangesPerBatch}`);
      }
      let bytes = 0;
      const changes: StoreChange[] = new Array<StoreChange>(b.changes.length);
      const pool = b.changes.length >= POOL_MIN_CHANGES ? this.deps.checkPool : undefined;
      const batch = pool ? new CheckBatchBuilder(b.changes) : undefined;
      let prev: StoreChange | undefined;
      let options = DEFAULT_INDEX_OPTIONS;
      const text = batchText(b.changes.map((c) => c.objectJson));
      for (let i = 0; i < b.changes.length; i++) {
        const c = b.changes[i]!;
        if (c.account !== prev?.account) options = indexOptionsOf(this.deps.accounts.get(c.account)?.record);
        const sc = toStoreChange(c, i, prev, options, batch, text);
        bytes += sc.json.length + 256;
        changes[i] = prev = sc;
      }
      this.deps.metrics.bytesReceived.inc(bytes);
      this.deps.metrics.objectsChecked.inc({ on: batch ? 'thread' : 'event_loop' }, changes.length);
      const item: DataMessage = { kind: 'changes', seq, changes, bytes, observedAtMs: b.observedAtMs };
      if (pool && batch) {
        item.checking = pool.check(batch.build()).then(
          (r) => {
            item.checking = undefined;
            if (r.failed) {
              const c = b.changes[r.failed.index]!;
              item.refused = new ProtocolError(`${where(c, r.failed.index)}: ${r.failed.error}`);
              return;
            }
            for (let i = 0; i < changes.length; i++) {
              const got = r.results[i];
              if (!got || 'error' in got) continue;
              if (got.json !== undefined) {
                // A Secret without its data: no longer a slice of the batch's text.
                changes[i]!.json = got.json;
                changes[i]!.text = undefined;
              }
              changes[i]!.index = got.index;
            }
          },
          (e: unknown) => {
            item.checking = undefined;
            item.refused = e;
          },
        );
      }
      return item;
    }
    const scoped = m.syncStart ?? m.syncEnd ?? m.bookmark;
    if (!scoped) throw new ProtocolError(`unknown or empty message (${type})`);
    const seq = this.checkSeq(scoped.seq);
    const kind = m.syncStart ? 'syncStart' : m.syncEnd ? 'syncEnd' : 'bookmark';
    const key = validateKindKey(scoped.kind, kind);
    if (scoped.namespace && !KEY_TEXT.test(scoped.namespace)) throw new ProtocolError(`${kind}: invalid namespace`);
    const resourceVersion = m.syncEnd?.resourceVersion ?? m.bookmark?.resourceVersion ?? '';
    if (kind !== 'syncStart' && (!resourceVersion || resourceVersion.length > 64 || !KEY_TEXT.test(resourceVersion))) {
      throw new ProtocolError(`${kind}: invalid resource_version`);
    }
    return {
      kind,
      seq,
      scope: { account: scoped.account, group: key.group, kind: key.kind, namespace: scoped.namespace },
      version: key.version,
      resourceVersion,
    };
  }

  private enqueue(item: WorkItem): void {
    this.queue.push(item);
    if (item.kind === 'changes') {
      this.pendingBytes += item.bytes;
      if (!this.paused && this.pendingBytes > this.deps.limits.maxUnackedBytes) {
        // Stop reading: HTTP/2 flow control pushes back to the agent, whose own window is then full too.
        this.paused = true;
        this.call.pause();
      }
    }
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0 && !this.closed) {
        const head = this.queue[0]!;
        if (head.kind === 'hello') {
          this.queue.shift();
          await this.welcome(head.hello);
        } else if (head.kind === 'accounts') {
          this.queue.shift();
          await this.accountsUpdate(head.update);
        } else {
          if (head.kind === 'changes' && head.checking) await head.checking;
          if (head.kind === 'changes' && head.refused !== undefined) throw head.refused;
          await this.applyData();
        }
      }
    } catch (e) {
      this.close(e, e instanceof ProtocolError ? 'protocol_error' : 'store_error');
    } finally {
      this.draining = false;
    }
  }

  /** Applies every consecutive data message at the head of the queue as one store write, then acks. */
  private async applyData(): Promise<void> {
    const items: DataMessage[] = [];
    let opCount = 0;
    while (this.queue.length > 0 && opCount < 20_000) {
      const w = this.queue[0]!;
      if (w.kind === 'hello' || w.kind === 'accounts') break;
      // A batch still being checked (or refused) waits for its turn at the head of the queue.
      if (items.length > 0 && w.kind === 'changes' && (w.checking || w.refused !== undefined)) break;
      this.queue.shift();
      items.push(w);
      opCount += w.kind === 'changes' ? w.changes.length : 1;
    }
    const ops: StoreOp[] = [];
    let dropped = 0;
    // Per changes message, its applied changes as runs of one account (a batch is mostly one account): for
    // AccountActivity, without a map lookup per change on the ingest path.
    const runs = new Map<DataMessage, { account: string; n: number }[]>();
    for (const w of items) {
      if (w.kind === 'changes') {
        const accountRuns: { account: string; n: number }[] = [];
        runs.set(w, accountRuns);
        let run: { account: string; n: number } | undefined;
        for (const change of w.changes) {
          if (this.deps.accounts.holds(this.id, change.account)) {
            ops.push({ op: 'change', change });
            if (run?.account === change.account) run.n += 1;
            else accountRuns.push((run = { account: change.account, n: 1 }));
          } else dropped += 1;
        }
      } else if (this.deps.accounts.holds(this.id, w.scope.account)) {
        if (w.kind === 'syncStart') ops.push({ op: 'syncStart', scope: w.scope, version: w.version });
        else ops.push({ op: w.kind, scope: w.scope, version: w.version, resourceVersion: w.resourceVersion });
      } else {
        dropped += 1;
      }
    }
    if (dropped > 0) this.deps.metrics.droppedChanges.inc({ reason: 'account_not_held' }, dropped);
    const end = this.deps.metrics.storeWrite.startTimer({ store: this.deps.store.type });
    const stats = await this.deps.store.apply(ops);
    end();
    const now = Date.now();
    this.deps.metrics.changes.inc({ result: 'applied' }, stats.applied);
    if (stats.skipped) this.deps.metrics.changes.inc({ result: 'skipped' }, stats.skipped);
    let bytes = 0;
    const activity = this.deps.metrics.activity;
    // In message order, so changes between a scope's SyncStart and SyncEnd count as that sync's objects.
    for (const w of items) {
      if (w.kind === 'changes') {
        bytes += w.bytes;
        if (w.observedAtMs > 0) this.deps.metrics.changeLag.observe(Math.max(0, now - w.observedAtMs) / 1000);
        for (const r of runs.get(w)!) activity.applied(r.account, r.n, w.observedAtMs, now);
      } else if (w.kind === 'syncStart' || w.kind === 'syncEnd') {
        if (!this.deps.accounts.holds(this.id, w.scope.account)) continue;
        const s = w.scope;
        const scope = `${s.group}/${s.kind}/${s.namespace}`;
        if (w.kind === 'syncStart') activity.syncStart(this.id, s.account, scope, now);
        else activity.syncEnd(this.id, s.account, scope);
      }
    }
    this.pendingBytes -= bytes;
    this.ackedSeq = items[items.length - 1]!.seq;
    this.send({ ack: { seq: this.ackedSeq } });
    if (this.paused && this.pendingBytes <= this.deps.limits.maxUnackedBytes / 2) {
      this.paused = false;
      this.call.resume();
    }
  }

  private async register(accounts: Account[]) {
    const accepted: string[] = [];
    const rejected: { name: string; reason: string }[] = [];
    const resumePoints: ResumePoint[] = [];
    const seen = new Set<string>();
    for (const account of accounts) {
      if (seen.has(account.name)) {
        rejected.push({ name: account.name, reason: 'account listed twice by this agent' });
        continue;
      }
      seen.add(account.name);
      const clash = this.deps.upstreamClash?.(account.name);
      const verdict: GateVerdict = clash
        ? { ok: false, reason: clash, metricReason: 'upstream' }
        : (this.deps.gate?.check(this, account.name) ?? { ok: true });
      const r = verdict.ok
        ? await this.deps.accounts.register({ id: this.id, agentId: this.agentId }, account)
        : { accepted: false as const, reason: verdict.reason };
      if (!r.accepted && 'standby' in r && r.standby) {
        // Not an error: a hot standby for an account another replica of this agent group holds.
        this.standbyFor.add(account.name);
        rejected.push({ name: account.name, reason: r.reason });
        this.rejectedAccounts.set(account.name, r.reason);
        this.log.info({ account: account.name, reason: r.reason }, 'agent is standby for the account');
        continue;
      }
      if (!r.accepted) {
        const metricReason = !verdict.ok
          ? verdict.metricReason
          : r.reason.startsWith('invalid account name')
            ? 'invalid_name'
            : 'conflict';
        this.deps.metrics.accountRejections.inc({ reason: metricReason });
        rejected.push({ name: account.name, reason: r.reason });
        this.rejectedAccounts.set(account.name, r.reason);
        this.log.warn({ account: account.name, reason: r.reason, identity: this.identity.name }, 'account rejected');
        this.deps.gate?.rejected(this, account.name, r.reason);
        continue;
      }
      this.rejectedAccounts.delete(account.name);
      this.standbyFor.delete(account.name);
      accepted.push(account.name);
      for (const p of await this.deps.store.resumePoints(account.name)) {
        resumePoints.push({
          account: p.account,
          kind: { group: p.group, version: p.version, kind: p.kind, resource: '', namespaced: p.namespace !== '' },
          namespace: p.namespace,
          resourceVersion: p.resourceVersion,
        });
      }
    }
    return { accepted, rejected, resumePoints };
  }

  private async welcome(hello: Hello): Promise<void> {
    this.hello = hello;
    const { accepted, rejected, resumePoints } = await this.register(hello.accounts);
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
    for (const op of this.beforeWelcome.splice(0)) this.send({ operation: op });
    this.deps.gate?.welcomed(this);
  }

  private async accountsUpdate(update: AccountsUpdate): Promise<void> {
    const removed: string[] = [];
    for (const name of update.removed) {
      if (await this.deps.accounts.remove(this.id, name)) removed.push(name);
    }
    const { accepted, rejected, resumePoints } = await this.register(update.added);
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
    this.queue.length = 0;
    const released = this.deps.accounts.release(this.id);
    this.deps.metrics.sessions.dec();
    this.deps.metrics.sessionsClosed.inc({ reason: reason.split(':')[0] ?? reason });
    this.log.info({ reason, agentId: this.agentId, orphaned: released }, 'agent stream closed');
    this.deps.gate?.closed(this);
    this.onClosed(this);
  }
}

function messageType(m: AgentMessage): string {
  for (const [k, v] of Object.entries(m)) if (v !== undefined) return k;
  return 'empty';
}

function validateHello(h: Hello, maxAccounts: number): void {
  if (!h.agentId || h.agentId.length > 253 || !KEY_TEXT.test(h.agentId)) {
    throw new ProtocolError('hello: agent_id must be 1-253 printable ASCII characters');
  }
  if (h.protocolVersion > PROTOCOL_VERSION) {
    throw new ProtocolError(
      `hello: protocol version ${h.protocolVersion} is newer than this server's ${PROTOCOL_VERSION}`,
      GrpcStatus.FAILED_PRECONDITION,
    );
  }
  validateAccounts(h.accounts, maxAccounts);
}

function validateAccounts(accounts: Account[], maxAccounts: number): void {
  if (accounts.length > maxAccounts) throw new ProtocolError(`${accounts.length} accounts exceed ${maxAccounts}`);
  for (const a of accounts) {
    for (const role of [...(a.permissions?.read ?? []), ...(a.permissions?.write ?? [])]) {
      // As the agent config schema allows them: a role with whitespace silently matches nobody in Fiat.
      if (!ROLE.test(role)) {
        throw new ProtocolError(`account ${a.name}: invalid role ${JSON.stringify(role.slice(0, 80))} in permissions`);
      }
    }
  }
}

function validateKindKey(k: KindKey | undefined, where: string): KindKey {
  if (!k || !KIND.test(k.kind) || !/^[a-z0-9]+$/.test(k.version) || (k.group && !API_VERSION.test(`${k.group}/v1`))) {
    throw new ProtocolError(`${where}: invalid kind key ${JSON.stringify(k)}`);
  }
  return k;
}

const CHANGE_TYPES: Record<number, ChangeKind> = {
  [ChangeType.CHANGE_TYPE_ADDED]: 'ADDED',
  [ChangeType.CHANGE_TYPE_MODIFIED]: 'MODIFIED',
  [ChangeType.CHANGE_TYPE_DELETED]: 'DELETED',
};

/**
 * Validates one change: key fields, and the object parsed as a JSON object (Secrets also stripped of data) — here,
 * or, with `deferred`, by a check thread before the batch is written. `prev` is the change before it in the batch:
 * key fields equal to its were already validated.
 */
function toStoreChange(
  c: Change,
  index: number,
  prev: StoreChange | undefined,
  options: IndexOptions,
  deferred?: CheckBatchBuilder,
  text?: BatchText,
): StoreChange {
  const type = CHANGE_TYPES[c.type];
  if (!type) throw new ProtocolError(`${where(c, index)}: invalid type ${c.type}`);
  if (prev === undefined || c.account !== prev.account || c.apiVersion !== prev.apiVersion || c.kind !== prev.kind) {
    if (!c.account || !API_VERSION.test(c.apiVersion) || !KIND.test(c.kind)) {
      throw new ProtocolError(`${where(c, index)}: account, api_version and kind are required`);
    }
  }
  if (!c.name || c.name.length > 253 || !KEY_TEXT.test(c.name)) {
    throw new ProtocolError(`${where(c, index)}: invalid name`);
  }
  if (c.namespace && c.namespace !== prev?.namespace && (c.namespace.length > 63 || !KEY_TEXT.test(c.namespace))) {
    throw new ProtocolError(`${where(c, index)}: invalid namespace`);
  }
  if (!c.resourceVersion || c.resourceVersion.length > 64 || !KEY_TEXT.test(c.resourceVersion)) {
    throw new ProtocolError(`${where(c, index)}: invalid resource_version`);
  }
  if (c.uid.length > 64 || (c.uid && !KEY_TEXT.test(c.uid))) throw new ProtocolError(`${where(c, index)}: invalid uid`);
  let json = '';
  let shared: SharedText | undefined;
  let keys: IndexKeys = NO_KEYS;
  if (c.objectJson.length > 0) {
    const bytes = Buffer.from(c.objectJson.buffer, c.objectJson.byteOffset, c.objectJson.byteLength);
    const slice = text?.textOf(bytes);
    if (slice !== undefined) {
      json = slice;
      shared = text!.shared;
    } else {
      json = bytes.toString('utf8');
    }
    if (deferred) {
      // Checked by a worker before the batch is written (its keys and a Secret's stripped text filled in then).
      deferred.add(bytes, groupOf(c.apiVersion), c.apiVersion, c.kind, type === 'DELETED', options);
    } else {
      const checked = checkObject({
        text: json,
        group: groupOf(c.apiVersion),
        apiVersion: c.apiVersion,
        kind: c.kind,
        deleted: type === 'DELETED',
        options,
      });
      if ('error' in checked) throw new ProtocolError(`${where(c, index)}: ${checked.error}`);
      keys = checked.index;
      if (checked.json !== undefined) {
        json = checked.json;
        shared = undefined;
      }
    }
  } else if (type !== 'DELETED') {
    throw new ProtocolError(`${where(c, index)}: object_json is required for ${type}`);
  } else {
    deferred?.add(undefined, '', c.apiVersion, c.kind, true, options);
  }
  // Fields equal to the previous change's take its string instances: the decoded copies die young, and the cache,
  // which keeps apiVersion, kind and namespace with every object, holds one copy per run instead of one per object.
  const same = prev !== undefined && c.account === prev.account && c.apiVersion === prev.apiVersion;
  return {
    type,
    account: same ? prev.account : c.account,
    apiVersion: same ? prev.apiVersion : c.apiVersion,
    kind: prev !== undefined && c.kind === prev.kind ? prev.kind : c.kind,
    namespace: prev !== undefined && c.namespace === prev.namespace ? prev.namespace : c.namespace,
    name: c.name,
    uid: c.uid,
    resourceVersion: c.resourceVersion,
    json,
    // Always present (undefined when not sliced), so every StoreChange has one shape.
    text: shared,
    ...(keys !== NO_KEYS ? { index: keys } : {}),
  };
}

function where(c: Change, index: number): string {
  return `change ${index} (${c.kind} ${c.namespace}/${c.name})`;
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
