import type { Logger } from '../../shared/logging.js';
import { IDEMPOTENT_OPERATIONS, type NormalizedOperation, type OperationType } from '../../shared/ops/types.js';
import { operationMessage } from '../../shared/ops/wire.js';
import type { Operation, OperationResult } from '../../shared/proto.js';
import type { AccountRegistry } from '../accounts.js';
import type { BarrierOutcome } from './barrier.js';

/** What the dispatcher needs of an agent stream (sessions.ts AgentSession). */
export interface OperationSession {
  readonly id: string;
  readonly agentId: string;
  readonly open: boolean;
  sendOperation(op: Operation): void;
  /** Proto Cancel for an operation sent on this stream. */
  sendCancel(operationId: string, reason: string): void;
}

export interface DispatchRequest {
  operationId: string;
  account: string;
  type: OperationType;
  payload: unknown;
  /** Override of the dispatcher's wait for an agent to hold the account (live reads do not wait). */
  agentWaitMs?: number;
  /**
   * When the agent must give up, in milliseconds since the epoch: the meaning of `Operation.deadline_ms` and of the
   * peer forward's `deadlineMs` (shared/ops/wire.ts), used unchanged on both. Undefined: the dispatcher's
   * operation timeout from each send (an idempotent operation sent again gets a fresh one).
   */
  deadlineMs?: number;
  /**
   * Sessions of earlier deliveries of this operation id whose outcome never came back (a resumed task's operation):
   * `Operation.sent_before_on_sessions` (shared/ops/wire.ts).
   */
  sentBeforeOnSessions?: string[];
  /** Only this replica's streams (a request a peer forwarded here is never forwarded again). */
  localOnly?: boolean;
  /** How long the replica holding the stream waits for its cache (forwarded operations). */
  cacheWaitMs?: number;
  /** Who asked (the authenticated principal), named to the peer a forwarded operation goes to. */
  requestedBy?: string | undefined;
  /**
   * Aborted when the operation's task is cancelled, with the reason (a string) as its reason: not sent yet, it is
   * not sent; sent, the agent holding it gets a Cancel (through the peer replica holding its stream, if another) and
   * its answer says whether it stopped before any write or ran to its end.
   */
  signal?: AbortSignal;
}

export type DispatchOutcome =
  /** barrier: already awaited by the peer replica holding the agent (forwarded operations). */
  | { kind: 'result'; result: OperationResult; agentId: string; barrier?: BarrierOutcome }
  /** notHeld: no stream of this replica holds the account (localOnly); cancelled: never sent, by request. */
  | { kind: 'failed'; message: string; retryable: boolean; notHeld?: boolean; cancelled?: boolean };

/** not-held: the peer's agent left it; unreachable: the peer died or cannot be reached (did it run? unknown). */
export type ForwardOutcome = DispatchOutcome | { kind: 'not-held' } | { kind: 'unreachable'; message: string };

/** Sends an operation to the peer replica at `url`, whose agent holds the account (ops/peer-forward.ts). */
export type PeerForward = (
  url: string,
  req: DispatchRequest & { cacheWaitMs: number; deadlineMs: number },
  answerWithinMs: number,
) => Promise<ForwardOutcome>;

/** Asks the peer replica at `url` to send a Cancel down the stream it forwarded `operationId` on (ops/peer-forward.ts). */
export type PeerCancel = (url: string, operationId: string, reason: string) => Promise<void>;

export interface DispatchEvents {
  waitingForAgent?(): void;
  sent?(session: OperationSession, attempt: number): void;
}

export interface DispatcherOptions {
  /** How long an operation waits for an agent to hold its account (one may be reconnecting). */
  agentWaitMs: number;
  /** Deadline the agent gets for running one operation; the server gives up a little after it. */
  operationTimeoutMs: number;
}

type Route = { session: OperationSession } | { peer: { url: string; replica: string; agentId: string } };

/** Tries at a peer before giving up, and the pause between them (about a lease heartbeat). */
const MAX_PEER_ATTEMPTS = 20;
const PEER_RETRY_MS = 500;

/** Slack after the agent's own deadline before the server stops waiting for its answer. */
const ANSWER_SLACK_MS = 10_000;

/** How long to wait for an answer when the agent has `leftMs` until its deadline. */
const answerWithin = (leftMs: number): number => Math.max(0, leftMs) + Math.min(ANSWER_SLACK_MS, Math.max(0, leftMs));

interface InFlight {
  sessionId: string;
  resolve(outcome: { kind: 'result'; result: OperationResult } | { kind: 'dropped' }): void;
}

/**
 * Routes operations to the agent stream holding their account. Waits (bounded, event-driven through the account
 * registry) when no stream holds it; when the stream drops before the result is back, an idempotent operation is
 * sent again to whoever holds the account next, any other fails as retryable — never silently lost.
 */
export class OperationDispatcher {
  private readonly inFlight = new Map<string, InFlight>();
  private readonly accountWaiters = new Map<string, Set<() => void>>();

  constructor(
    private readonly deps: {
      accounts: AccountRegistry;
      session(id: string): OperationSession | undefined;
      log: Logger;
      options: DispatcherOptions;
      forward?: PeerForward;
      cancelAtPeer?: PeerCancel;
    },
  ) {
    deps.accounts.onChange((name, state) => {
      if (state !== 'ACTIVE') return;
      const waiters = this.accountWaiters.get(name);
      if (!waiters) return;
      this.accountWaiters.delete(name);
      for (const w of waiters) w();
    });
  }

  async execute(req: DispatchRequest, events: DispatchEvents = {}): Promise<DispatchOutcome> {
    const agentWaitMs = req.agentWaitMs ?? this.deps.options.agentWaitMs;
    for (let attempt = 1; ; attempt++) {
      const route = await this.holder(req.account, agentWaitMs, events, req.localOnly ?? false, req.signal);
      if (req.signal?.aborted) return notSent(req, attempt);
      const deadlineMs = req.deadlineMs ?? Date.now() + this.deps.options.operationTimeoutMs;
      const answerWithinMs = answerWithin(deadlineMs - Date.now());
      if (route && 'peer' in route) {
        const o = await this.forwardToPeer(route.peer, { ...req, deadlineMs }, answerWithinMs, events, attempt);
        if (o === 'retry') continue;
        return o;
      }
      const session = route?.session;
      if (!session) {
        return {
          kind: 'failed',
          retryable: true,
          notHeld: req.localOnly,
          message:
            `no agent holds account ${req.account}` +
            (attempt > 1 ? ' after its agent disconnected mid-operation' : '') +
            ` (waited ${Math.round(agentWaitMs / 1000)} s for one to connect)`,
        };
      }
      const outcome = await new Promise<
        { kind: 'result'; result: OperationResult } | { kind: 'dropped' } | { kind: 'timeout' }
      >((resolve) => {
        const cancel = (): void => session.sendCancel(req.operationId, reasonOf(req.signal!));
        const timer = setTimeout(() => {
          req.signal?.removeEventListener('abort', cancel);
          this.inFlight.delete(req.operationId);
          resolve({ kind: 'timeout' });
        }, answerWithinMs);
        timer.unref();
        this.inFlight.set(req.operationId, {
          sessionId: session.id,
          resolve: (o) => {
            clearTimeout(timer);
            req.signal?.removeEventListener('abort', cancel);
            this.inFlight.delete(req.operationId);
            resolve(o);
          },
        });
        session.sendOperation(
          operationMessage(
            req.operationId,
            { type: req.type, account: req.account, payload: req.payload } as NormalizedOperation,
            deadlineMs,
            req.sentBeforeOnSessions,
          ),
        );
        events.sent?.(session, attempt);
        // After the operation on the same stream, so the agent has it when the Cancel comes.
        req.signal?.addEventListener('abort', cancel, { once: true });
      });
      if (outcome.kind === 'result') return { kind: 'result', result: outcome.result, agentId: session.agentId };
      if (outcome.kind === 'timeout') {
        return {
          kind: 'failed',
          retryable: true,
          message: `agent ${session.agentId} did not answer ${req.type} within ${Math.round(answerWithinMs / 1000)} s`,
        };
      }
      if (req.signal?.aborted) return notSent(req, attempt);
      if (!IDEMPOTENT_OPERATIONS.has(req.type)) {
        return {
          kind: 'failed',
          retryable: true,
          message:
            `agent ${session.agentId} disconnected while running ${req.type} on account ${req.account}; ` +
            `${req.type} is not idempotent, so it was not sent again: check the cluster before retrying`,
        };
      }
      this.deps.log.warn(
        { operationId: req.operationId, type: req.type, account: req.account, agentId: session.agentId, attempt },
        'agent disconnected mid-operation; sending the idempotent operation again',
      );
    }
  }

  /**
   * The account's agent is on a peer replica: that replica runs the operation and its cache barrier. When the peer
   * no longer holds it (the agent moved), look again; when the peer died mid-operation, an idempotent operation
   * goes again to wherever the agent reconnects, any other fails as retryable (it may or may not have run).
   */
  private async forwardToPeer(
    peer: { url: string; replica: string; agentId: string },
    req: DispatchRequest & { deadlineMs: number },
    answerWithinMs: number,
    events: DispatchEvents,
    attempt: number,
  ): Promise<DispatchOutcome | 'retry'> {
    const forward = this.deps.forward;
    if (!forward) throw new Error('no peer forwarding configured');
    events.sent?.(
      { id: `replica:${peer.replica}`, agentId: peer.agentId, open: true, sendOperation() {}, sendCancel() {} },
      attempt,
    );
    const cacheWaitMs = req.cacheWaitMs ?? 0;
    const cancel = (): void => {
      this.deps.cancelAtPeer?.(peer.url, req.operationId, reasonOf(req.signal!)).catch((e: unknown) => {
        this.deps.log.warn(
          { operationId: req.operationId, replica: peer.replica, err: e },
          'cannot pass a cancel to the replica running the operation; it runs to its end',
        );
      });
    };
    req.signal?.addEventListener('abort', cancel, { once: true });
    const o = await forward(peer.url, { ...req, cacheWaitMs }, answerWithinMs + cacheWaitMs).finally(() =>
      req.signal?.removeEventListener('abort', cancel),
    );
    if (o.kind === 'not-held') {
      // Give the registry a heartbeat to learn who holds it now; bounded by the retry budget of execute's caller.
      if (attempt >= MAX_PEER_ATTEMPTS) {
        return { kind: 'failed', retryable: true, message: `account ${req.account} kept moving between replicas` };
      }
      await new Promise((r) => setTimeout(r, PEER_RETRY_MS));
      return 'retry';
    }
    if (o.kind === 'unreachable') {
      if (!IDEMPOTENT_OPERATIONS.has(req.type)) {
        return {
          kind: 'failed',
          retryable: true,
          message:
            `${o.message}; ${req.type} on account ${req.account} may or may not have run and is not idempotent, ` +
            'so it was not sent again: check the cluster before retrying',
        };
      }
      if (attempt >= MAX_PEER_ATTEMPTS) return { kind: 'failed', retryable: true, message: o.message };
      await new Promise((r) => setTimeout(r, PEER_RETRY_MS));
      return 'retry';
    }
    return o;
  }

  /** An OperationResult from a stream; results from a stream the operation was not sent on are ignored. */
  onResult(sessionId: string, result: OperationResult): void {
    const f = this.inFlight.get(result.operationId);
    if (!f || f.sessionId !== sessionId) {
      this.deps.log.warn({ operationId: result.operationId, sessionId }, 'result for an unknown operation ignored');
      return;
    }
    f.resolve({ kind: 'result', result });
  }

  /** A stream ended: everything in flight on it is dropped (retried or failed by execute()). */
  onSessionClosed(sessionId: string): void {
    for (const f of [...this.inFlight.values()]) if (f.sessionId === sessionId) f.resolve({ kind: 'dropped' });
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  private holdingSession(account: string, localOnly: boolean): Route | undefined {
    const a = this.deps.accounts.get(account);
    if (a?.sessionId) {
      const s = this.deps.session(a.sessionId);
      return s?.open ? { session: s } : undefined;
    }
    if (!localOnly && this.deps.forward && a?.peer?.url && a.state !== 'ORPHANED') return { peer: a.peer };
    return undefined;
  }

  private async holder(
    account: string,
    waitMs: number,
    events: DispatchEvents,
    localOnly: boolean,
    signal: AbortSignal | undefined,
  ): Promise<Route | undefined> {
    const now = this.holdingSession(account, localOnly);
    if (now || signal?.aborted) return now;
    events.waitingForAgent?.();
    const until = Date.now() + waitMs;
    for (;;) {
      const left = until - Date.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const waiters = this.accountWaiters.get(account) ?? new Set<() => void>();
        this.accountWaiters.set(account, waiters);
        const wake = (): void => {
          clearTimeout(timer);
          waiters.delete(wake);
          signal?.removeEventListener('abort', wake);
          resolve();
        };
        const timer = setTimeout(wake, left);
        timer.unref();
        waiters.add(wake);
        signal?.addEventListener('abort', wake, { once: true });
      });
      const s = this.holdingSession(account, localOnly);
      if (s || signal?.aborted) return s;
    }
  }
}

const reasonOf = (signal: AbortSignal): string => String(signal.reason);

/** A cancelled operation that was not sent (again): it changed nothing. */
function notSent(req: DispatchRequest, attempt: number): DispatchOutcome {
  return {
    kind: 'failed',
    retryable: false,
    cancelled: true,
    message:
      attempt > 1
        ? `${req.type} on account ${req.account} was cancelled (${reasonOf(req.signal!)}) after its agent went away ` +
          'without answering: whether it changed anything is unknown, and it was not sent again'
        : `${req.type} on account ${req.account} was cancelled before it was sent: ${reasonOf(req.signal!)}`,
  };
}
