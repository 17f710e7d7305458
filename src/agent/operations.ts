import type { Logger } from '../shared/logging.js';
import { failureMessage } from '../shared/ops/wire.js';
import type { Operation, OperationResult } from '../shared/proto.js';
import type { KubeClient } from './kube/client.js';
import { executeWireOperation } from './ops/index.js';
import { DeliveryLog } from './deliveries.js';
import { OnceByOperationId } from './ops/once.js';
import { CancelPoint, cancelDecision, type CancelDecision } from './ops/cancel.js';

export interface OperationRunnerDeps {
  logger: Logger;
  /**
   * The account's Kubernetes client: the one its watches use (AccountRunner.kubeClient), so operations share its
   * discovery cache and connections. Undefined when this agent does not have the account.
   */
  client(account: string): Promise<KubeClient> | undefined;
  /** Sends the result back on the stream (dropped when the stream is down: the server then retries or fails). */
  send(result: OperationResult): void;
  /** Counts each Cancel by its decision (AgentMetrics.operationCancels). */
  cancelled?(decision: CancelDecision): void;
}

/**
 * Runs the operations the plugin-server sends (ServerMessage.operation) with the account's client, the one its
 * watches use (docs/architecture.md), and sends each OperationResult back.
 */
export class OperationRunner {
  private readonly abort = new AbortController();
  private readonly running = new Set<Promise<void>>();
  /** Operations sent again under the same id (a resumed task) get the first run's result: see ops/once.ts. */
  private readonly once = new OnceByOperationId<OperationResult>({
    succeeded: (r) => r.ok,
    retain: ownResultBytes,
    sizeOf: (r) => r.resultJson.byteLength,
  });

  /** Operations running now, by id: what a Cancel finds (ops/cancel.ts). */
  private readonly cancelPoints = new Map<string, CancelPoint>();

  constructor(private readonly deps: OperationRunnerDeps) {}

  /** Which ids arrived on which of this process's sessions: tells a lost delivery from one that ran unseen. */
  private readonly deliveries = new DeliveryLog();

  /** A stream was welcomed as `sessionId`: operations that never arrive on it can be told from ones that did. */
  sessionOpened(sessionId: string): void {
    this.deliveries.opened(sessionId);
  }

  /** Runs `op`, which came on the stream of session `sessionId` (Welcome.session_id). */
  run(op: Operation, sessionId: string): void {
    // Decided before this delivery is recorded: could an earlier delivery have run here without this process
    // remembering it? (An id it remembers is answered by `once` below and never reaches execute.)
    const sentBefore =
      op.sentBeforeOnSessions.length > 0 && !this.deliveries.neverArrived(op.operationId, op.sentBeforeOnSessions);
    this.deliveries.arrived(sessionId, op.operationId);
    const { result, repeated } = this.once.run(op.operationId, () => this.execute(op, sentBefore));
    if (repeated) {
      this.deps.logger.info(
        { operationId: op.operationId, account: op.account, type: op.type },
        'operation sent again: answering with the result of its first run',
      );
    }
    const p = result.then((r) => this.deps.send(r)).finally(() => this.running.delete(p));
    this.running.add(p);
  }

  /**
   * ServerMessage.cancel: stops the operation if none of its writes went out (it answers failed, SA_ERR_CANCELLED),
   * else lets it run to its end (it answers as it ended, saying the cancel came too late). An id not running is ignored.
   */
  cancel(operationId: string, reason: string): void {
    const point = this.cancelPoints.get(operationId);
    const decision = point ? point.request(reason) : cancelDecision({ running: false, writesSent: 0 });
    this.deps.logger.info({ operationId, reason, decision }, 'cancel requested');
    this.deps.cancelled?.(decision);
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Aborts running operations (each still answers, as a failure) and waits for them. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled([...this.running]);
  }

  private async execute(op: Operation, sentBefore: boolean): Promise<OperationResult> {
    const log = this.deps.logger.child({ operationId: op.operationId, account: op.account, type: op.type });
    const started = Date.now();
    let result: OperationResult;
    const client = this.deps.client(op.account);
    if (!client) {
      result = failureMessage(op, {
        code: 'SA_ERR_INVALID_INPUT',
        error: `account ${op.account} is not configured on this agent`,
        retryable: false,
      });
    } else {
      const cancel = new CancelPoint();
      this.cancelPoints.set(op.operationId, cancel);
      try {
        result = await executeWireOperation(await client, op, { log, signal: this.abort.signal, sentBefore, cancel });
      } catch (e) {
        result = failureMessage(op, {
          code: 'SA_ERR_INVALID_INPUT',
          error: `cannot load credentials of account ${op.account}: ${(e as Error).message}`,
          retryable: false,
        });
      } finally {
        this.cancelPoints.delete(op.operationId);
      }
    }
    log.info({ ok: result.ok, ms: Date.now() - started, error: result.error || undefined }, 'operation finished');
    return result;
  }
}

/**
 * The result with its JSON copied into a buffer of its own: a small Buffer is a slice of a shared 64 KiB pool slab,
 * and a slice kept for minutes keeps the whole slab (see ops/once.ts).
 */
export function ownResultBytes(r: OperationResult): OperationResult {
  const json = r.resultJson;
  // new Uint8Array(view) copies into a fresh ArrayBuffer of exactly the view's length; Buffer.from(arrayBuffer) wraps it.
  return { ...r, resultJson: Buffer.from(new Uint8Array(json).buffer) };
}
