import type { Logger } from '../shared/logging.js';
import { exceptionResult } from '../shared/ops/results.js';
import type { OperationType } from '../shared/ops/types.js';
import type { Operation, OperationResult } from '../shared/proto.js';
import type { AccountConfig } from './config.js';
import { KubeClient } from './kube/client.js';
import { executeWireOperation } from './ops/index.js';
import { OnceByOperationId } from './ops/once.js';

export interface OperationRunnerDeps {
  logger: Logger;
  /** The account's current configuration (undefined when this agent does not have it). */
  account(name: string): AccountConfig | undefined;
  /** Sends the result back on the stream (dropped when the stream is down: the server then retries or fails). */
  send(result: OperationResult): void;
}

/**
 * Runs the operations the plugin-server sends (ServerMessage.operation) with the account's credentials and sends
 * each OperationResult back. Operations use the same access layer as the watches (kube/client.ts: credentials,
 * proxy, TLS server name, HTTP/2 connections shared with the account's watches), one client per account
 * configuration, replaced when the configuration changes.
 */
export class OperationRunner {
  private readonly clients = new Map<string, { key: string; client: Promise<KubeClient> }>();
  private readonly abort = new AbortController();
  private readonly running = new Set<Promise<void>>();
  /** Operations sent again under the same id (a resumed task) get the first run's result: see ops/once.ts. */
  private readonly once = new OnceByOperationId<OperationResult>({
    succeeded: (r) => r.ok,
    retain: ownResultBytes,
    sizeOf: (r) => r.resultJson.byteLength,
  });

  constructor(private readonly deps: OperationRunnerDeps) {}

  run(op: Operation): void {
    const { result, repeated } = this.once.run(op.operationId, () => this.execute(op));
    if (repeated) {
      this.deps.logger.info(
        { operationId: op.operationId, account: op.account, type: op.type },
        'operation sent again: answering with the result of its first run',
      );
    }
    const p = result.then((r) => this.deps.send(r)).finally(() => this.running.delete(p));
    this.running.add(p);
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Aborts running operations (each still answers, as a failure) and waits for them. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled([...this.running]);
    for (const { client } of this.clients.values()) void client.then((c) => c.close()).catch(() => undefined);
    this.clients.clear();
  }

  private async execute(op: Operation): Promise<OperationResult> {
    const log = this.deps.logger.child({ operationId: op.operationId, account: op.account, type: op.type });
    const started = Date.now();
    let result: OperationResult;
    const config = this.deps.account(op.account);
    if (!config) {
      result = failure(op, `account ${op.account} is not configured on this agent`);
    } else {
      try {
        const client = await this.client(config);
        result = await executeWireOperation(client, op, { log, signal: this.abort.signal });
      } catch (e) {
        result = failure(op, `cannot load credentials of account ${op.account}: ${(e as Error).message}`);
      }
    }
    log.info({ ok: result.ok, ms: Date.now() - started, error: result.error || undefined }, 'operation finished');
    return result;
  }

  private client(config: AccountConfig): Promise<KubeClient> {
    const key = JSON.stringify([
      config.kubeconfigFile,
      config.kubeconfigContents,
      config.serviceAccount,
      config.context,
    ]);
    const cached = this.clients.get(config.name);
    if (cached?.key === key) return cached.client;
    if (cached) void cached.client.then((c) => c.close()).catch(() => undefined);
    const client = KubeClient.create(config);
    this.clients.set(config.name, { key, client });
    // A failed load is not cached: the file may appear (a Secret mounted late).
    client.catch(() => {
      if (this.clients.get(config.name)?.client === client) this.clients.delete(config.name);
    });
    return client;
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

function failure(op: Operation, error: string): OperationResult {
  const result = exceptionResult(op.type as OperationType, error);
  return {
    operationId: op.operationId,
    ok: false,
    error,
    resultJson: Buffer.from(
      JSON.stringify({ result, messages: [], errorCode: 'SA_ERR_INVALID_INPUT', retryable: false }),
    ),
    resourceVersions: {},
  };
}
