import { ScaleAgentError } from '../../shared/errors.js';
import { DEFAULT_LOG_LIMIT_BYTES } from '../../shared/ops/types.js';
import { parseApiVersion } from '../../shared/proto.js';
import type { AccountRegistry } from '../accounts.js';
import type { CachedObject } from '../cache/store.js';
import { isCached } from './barrier.js';
import type { OperationDispatcher } from './dispatcher.js';

interface LiveManifest {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; resourceVersion?: string };
}

let sequence = 0;

/**
 * `GET /manifests/...` for kinds the agent does not cache (filtered out by kinds/namespaces, or a CRD discovered a
 * moment ago): a liveGet through the account's agent, answered in the cache's shape. Returns undefined when the
 * kind is cached (the cache is authoritative then), when no agent holds the account, or when the object is absent.
 */
export class LiveReader {
  constructor(
    private readonly deps: { accounts: AccountRegistry; dispatcher: OperationDispatcher; timeoutMs: number },
  ) {}

  async get(
    account: string,
    location: string,
    kindSpec: string,
    resolved: { kind: string; group: string | undefined },
    name: string,
  ): Promise<CachedObject | undefined> {
    const a = this.deps.accounts.get(account);
    if (!a?.sessionId) return undefined;
    if (resolved.group !== undefined && isCached(a, resolved.group, resolved.kind, location)) return undefined;
    const outcome = await this.deps.dispatcher.execute({
      operationId: `live-${Date.now().toString(36)}-${(sequence++).toString(36)}`,
      account,
      type: 'liveGet',
      payload: { target: { location, kind: kindSpec, name } },
      agentWaitMs: 0,
      deadlineMs: Date.now() + this.deps.timeoutMs,
    });
    if (outcome.kind !== 'result' || !outcome.result.ok) return undefined;
    const body = JSON.parse(Buffer.from(outcome.result.resultJson).toString('utf8')) as {
      result?: { manifest?: LiveManifest | null };
    };
    return asCached(account, body.result?.manifest);
  }

  /**
   * The objects of one kind in one namespace, live, for reads that list (cluster targets) when the account does not
   * cache that kind there. Undefined when the cache is authoritative, no agent holds the account, or the read failed.
   */
  async list(
    account: string,
    location: string,
    kindSpec: string,
    resolved: { kind: string; group: string | undefined },
  ): Promise<CachedObject[] | undefined> {
    const a = this.deps.accounts.get(account);
    if (!a?.sessionId || resolved.group === undefined || isCached(a, resolved.group, resolved.kind, location)) {
      return undefined;
    }
    const outcome = await this.deps.dispatcher.execute({
      operationId: `live-${Date.now().toString(36)}-${(sequence++).toString(36)}`,
      account,
      type: 'liveList',
      payload: { location, kind: kindSpec },
      agentWaitMs: 0,
      deadlineMs: Date.now() + this.deps.timeoutMs,
    });
    if (outcome.kind !== 'result' || !outcome.result.ok) return undefined;
    const body = JSON.parse(Buffer.from(outcome.result.resultJson).toString('utf8')) as {
      result?: { items?: LiveManifest[] };
    };
    return (body.result?.items ?? []).flatMap((m) => asCached(account, m) ?? []);
  }

  /**
   * One container's log through the account's agent (there is no log in the cache). Throws UNAVAILABLE when no
   * agent holds the account, and the agent's own error (a pod whose container has not started is a 400 from the
   * API server) with its code otherwise.
   */
  async logs(account: string, location: string, pod: string, container: string | undefined): Promise<string> {
    const a = this.deps.accounts.get(account);
    if (!a?.sessionId && !a?.peer) {
      throw new ScaleAgentError('UNAVAILABLE', `no agent holds account ${account}, so pod logs cannot be read`);
    }
    const outcome = await this.deps.dispatcher.execute({
      operationId: `live-${Date.now().toString(36)}-${(sequence++).toString(36)}`,
      account,
      type: 'liveLogs',
      payload: { location, pod, ...(container ? { container } : {}), limitBytes: DEFAULT_LOG_LIMIT_BYTES },
      agentWaitMs: 0,
      deadlineMs: Date.now() + this.deps.timeoutMs,
    });
    if (outcome.kind !== 'result') throw new ScaleAgentError('UNAVAILABLE', outcome.message);
    const body = JSON.parse(Buffer.from(outcome.result.resultJson).toString('utf8')) as {
      result?: { log?: unknown };
      errorCode?: string;
    };
    if (!outcome.result.ok) {
      const kind = (body.errorCode ?? '').replace(/^SA_ERR_/, '');
      throw new ScaleAgentError(
        kind === 'NOT_FOUND' || kind === 'INVALID_INPUT' || kind === 'FORBIDDEN' ? kind : 'UNAVAILABLE',
        `cannot read the log of pod ${pod}${container ? ` container ${container}` : ''}: ${outcome.result.error}`,
      );
    }
    return typeof body.result?.log === 'string' ? body.result.log : '';
  }
}

/** A manifest read live, in the cache's shape. */
function asCached(account: string, m: LiveManifest | null | undefined): CachedObject | undefined {
  if (!m?.apiVersion || !m.kind || !m.metadata?.name) return undefined;
  return {
    account,
    group: parseApiVersion(m.apiVersion).group,
    apiVersion: m.apiVersion,
    kind: m.kind,
    namespace: m.metadata.namespace ?? '',
    name: m.metadata.name,
    uid: m.metadata.uid ?? '',
    resourceVersion: m.metadata.resourceVersion ?? '',
    json: JSON.stringify(m),
  };
}
