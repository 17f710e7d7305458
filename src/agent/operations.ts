import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from '../shared/logging.js';
import { exceptionResult } from '../shared/ops/results.js';
import type { OperationType } from '../shared/ops/types.js';
import type { Operation, OperationResult } from '../shared/proto.js';
import type { AccountConfig } from './config.js';
import { executeWireOperation } from './ops/index.js';

export interface OperationRunnerDeps {
  logger: Logger;
  /** The account's current configuration (undefined when this agent does not have it). */
  account(name: string): AccountConfig | undefined;
  /** Sends the result back on the stream (dropped when the stream is down: the server then retries or fails). */
  send(result: OperationResult): void;
}

/**
 * Runs the operations the plugin-server sends (ServerMessage.operation) with the account's credentials and sends
 * each OperationResult back. The watches use the agent's own light HTTP/2 client; operations need verbs, patch types
 * and exec/auth-provider credentials that @kubernetes/client-node's KubeConfig already handles, so it is loaded —
 * on the first operation only, it costs tens of MB — once per account configuration.
 */
export class OperationRunner {
  private readonly configs = new Map<string, { key: string; kc: Promise<KubeConfig> }>();
  private readonly abort = new AbortController();
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly deps: OperationRunnerDeps) {}

  run(op: Operation): void {
    const p = this.execute(op).finally(() => this.running.delete(p));
    this.running.add(p);
  }

  get inFlight(): number {
    return this.running.size;
  }

  /** Aborts running operations (each still answers, as a failure) and waits for them. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.allSettled([...this.running]);
  }

  private async execute(op: Operation): Promise<void> {
    const log = this.deps.logger.child({ operationId: op.operationId, account: op.account, type: op.type });
    const started = Date.now();
    let result: OperationResult;
    const config = this.deps.account(op.account);
    if (!config) {
      result = failure(op, `account ${op.account} is not configured on this agent`);
    } else {
      try {
        const kc = await this.kubeConfig(config);
        result = await executeWireOperation(kc, op, { log, signal: this.abort.signal });
      } catch (e) {
        result = failure(op, `cannot load credentials of account ${op.account}: ${(e as Error).message}`);
      }
    }
    log.info({ ok: result.ok, ms: Date.now() - started, error: result.error || undefined }, 'operation finished');
    this.deps.send(result);
  }

  private kubeConfig(config: AccountConfig): Promise<KubeConfig> {
    const key = JSON.stringify([config.kubeconfigFile, config.serviceAccount, config.context]);
    const cached = this.configs.get(config.name);
    if (cached?.key === key) return cached.kc;
    const kc = loadKubeConfig(config);
    this.configs.set(config.name, { key, kc });
    // A failed load is not cached: the file may appear (a Secret mounted late).
    kc.catch(() => {
      if (this.configs.get(config.name)?.kc === kc) this.configs.delete(config.name);
    });
    return kc;
  }
}

async function loadKubeConfig(config: AccountConfig): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (config.serviceAccount) kc.loadFromCluster();
  else if (config.kubeconfigFile) kc.loadFromFile(config.kubeconfigFile);
  else throw new Error('the account has neither kubeconfigFile nor serviceAccount');
  if (config.context) kc.setCurrentContext(config.context);
  return kc;
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
