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
      timeoutMs: this.deps.timeoutMs,
    });
    if (outcome.kind !== 'result' || !outcome.result.ok) return undefined;
    const body = JSON.parse(Buffer.from(outcome.result.resultJson).toString('utf8')) as {
      result?: { manifest?: LiveManifest | null };
    };
    const m = body.result?.manifest;
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
}
