/**
 * The fleet, read from one plugin-server's admin API (every replica lists every replica's agents and accounts) (/readyz, /armory/agents, /armory/accounts,
 * /armory/agent/operations) and its /metrics (objects cached per account), and judged: what is unhealthy, so
 * `scale-agent status` can exit non-zero in CI and cron.
 */
import { ScaleAgentError } from '../../shared/errors.js';
import type { AccountSyncView } from '../../plugin-server/account-activity.js';
import { pluginServerRequest } from '../plugin-server-request.js';

export interface AgentStatus {
  agentId: string;
  /** The replica its stream ends on: 'local' (the one asked) or the peer replica's id. */
  heldBy: string;
  version: string;
  zone: string;
  connectedAt: string;
  accounts: string[];
  /** Accounts offered and not accepted; a `standby: ...` reason is normal for a second agent of a group. */
  rejected: { name: string; reason: string }[];
}

export interface AccountStatus {
  name: string;
  state: string;
  agentId: string;
  /** 'local' (this replica), the peer replica's id, or '' when no replica holds it. */
  heldBy: string;
  objects: number;
  error: string;
  forbiddenKinds: string[];
  orphanedAt?: number | undefined;
  /** Change→cache lag of the account's latest applied batch, as the replica holding it saw it. */
  changeLagMs: number | null;
  /** The agent is listing the account (initial sync or relist), when this replica holds it. */
  sync: AccountSyncView | null;
}

export interface OperationStatus {
  operationId: string;
  type: string;
  account: string;
  state: string;
  queuedAt?: number;
}

export interface FleetStatus {
  url: string;
  ready: boolean;
  readyReasons: string[];
  agents: AgentStatus[];
  accounts: AccountStatus[];
  pendingOperations: OperationStatus[];
  /** What makes the fleet unhealthy (empty when healthy), one line each. */
  problems: string[];
  takenAt: string;
}

export interface FleetFilter {
  /** Account name, `*` matches any run of characters. */
  account?: string | undefined;
  agent?: string | undefined;
  state?: string | undefined;
}

interface AgentView {
  agentId: string;
  heldBy?: 'local' | { replica: string };
  version?: string;
  zoneId?: string;
  connectedAt?: string;
  accounts?: string[];
  rejectedAccounts?: { name: string; reason: string }[];
}

interface AccountView {
  name: string;
  state: string;
  agentId?: string;
  heldBy?: 'local' | { replica: string } | null;
  errorMessage?: string;
  forbiddenKinds?: string[];
  orphanedAt?: number;
  changeLagMs?: number | null;
  sync?: AccountSyncView | null;
}

async function getJson<T>(base: string, path: string, token: string | undefined, timeoutMs: number): Promise<T> {
  const res = await pluginServerRequest(base, path, { token, timeoutMs, scope: 'read' });
  const text = res.text;
  // /readyz answers 503 with its reasons: a state to show, not an error.
  if (!res.ok && !(path === '/readyz' && res.status === 503)) {
    throw new ScaleAgentError('UNAVAILABLE', `GET ${base}${path}: ${res.status} ${text.slice(0, 200)}`);
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ScaleAgentError('UNAVAILABLE', `GET ${base}${path}: not JSON (is ${base} a plugin-server REST URL?)`);
  }
}

/** Sums `scale_agent_plugin_server_cached_objects{account=...}` per account from Prometheus text. */
export function objectsPerAccount(metrics: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of metrics.split('\n')) {
    const m = /^scale_agent_plugin_server_cached_objects\{(.*)\} (\S+)$/.exec(line);
    if (!m) continue;
    const account = /(?:^|,)account="((?:[^"\\]|\\.)*)"/.exec(m[1]!)?.[1];
    if (account !== undefined) out.set(account, (out.get(account) ?? 0) + Number(m[2]));
  }
  return out;
}

function globToRegExp(glob: string): RegExp {
  return new RegExp(
    `^${glob
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
}

/** Reads the fleet from a plugin-server and judges it; filters narrow both what is shown and what is judged. */
export async function collectFleet(
  url: string,
  options: { token?: string | undefined; filter?: FleetFilter; timeoutMs?: number } = {},
): Promise<FleetStatus> {
  const base = url.replace(/\/+$/, '');
  const { token, filter = {}, timeoutMs = 10_000 } = options;
  const get = <T>(path: string) => getJson<T>(base, path, token, timeoutMs);
  const [ready, agentViews, pending] = await Promise.all([
    get<{ status: string; reasons?: string[] }>('/readyz'),
    get<AgentView[]>('/armory/agents'),
    get<OperationStatus[]>('/armory/agent/operations'),
  ]);
  const accountViews: AccountView[] = [];
  for (let page = 1; ; page++) {
    const p = await get<{ items: AccountView[]; total: number }>(`/armory/accounts?page=${page}&limit=1000`);
    accountViews.push(...p.items);
    if (p.items.length === 0 || accountViews.length >= p.total) break;
  }
  let objects = new Map<string, number>();
  try {
    const res = await fetch(`${base}/metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    if (res.ok) objects = objectsPerAccount(await res.text());
  } catch {
    // Counts are a convenience; the fleet's state does not depend on them.
  }

  const accountMatch = filter.account ? globToRegExp(filter.account) : undefined;
  const agents: AgentStatus[] = agentViews
    .filter((a) => !filter.agent || a.agentId === filter.agent)
    .map((a) => ({
      agentId: a.agentId,
      heldBy: heldBy(a.heldBy),
      version: a.version ?? '',
      zone: a.zoneId ?? '',
      connectedAt: a.connectedAt ?? '',
      accounts: a.accounts ?? [],
      rejected: a.rejectedAccounts ?? [],
    }))
    .sort((a, b) => (a.agentId < b.agentId ? -1 : 1));
  const accounts: AccountStatus[] = accountViews
    .map((a) => ({
      name: a.name,
      state: a.state,
      agentId: a.agentId ?? '',
      heldBy: heldBy(a.heldBy),
      objects: objects.get(a.name) ?? 0,
      error: a.errorMessage ?? '',
      forbiddenKinds: a.forbiddenKinds ?? [],
      orphanedAt: a.orphanedAt,
      changeLagMs: a.changeLagMs ?? null,
      sync: a.sync ?? null,
    }))
    .filter((a) => !accountMatch || accountMatch.test(a.name))
    .filter((a) => !filter.agent || a.agentId === filter.agent)
    .filter((a) => !filter.state || a.state === filter.state.toUpperCase());
  const shown = new Set(accounts.map((a) => a.name));
  const pendingOperations = pending.filter((o) => shown.has(o.account) || (!filter.account && !filter.agent));

  const problems: string[] = [];
  const isReady = ready.status === 'ready';
  if (!isReady) problems.push(`plugin-server not ready: ${(ready.reasons ?? []).join('; ') || 'no reason given'}`);
  for (const a of accounts) {
    if (a.state === 'ORPHANED') problems.push(`account ${a.name} is ORPHANED: no agent holds it`);
    else if (a.state === 'FAILED') problems.push(`account ${a.name} is FAILED: ${a.error || 'agent reports failure'}`);
    else if (a.forbiddenKinds.length) problems.push(`account ${a.name} cannot watch ${a.forbiddenKinds.join(', ')}`);
  }
  for (const ag of agents) {
    for (const r of ag.rejected) {
      if (!r.reason.startsWith('standby:'))
        problems.push(`agent ${ag.agentId}: account ${r.name} rejected: ${r.reason}`);
    }
  }
  return {
    url: base,
    ready: isReady,
    readyReasons: ready.reasons ?? [],
    agents,
    accounts,
    pendingOperations,
    problems,
    takenAt: new Date().toISOString(),
  };
}

function heldBy(h: 'local' | { replica: string } | null | undefined): string {
  return h === 'local' ? 'local' : h ? h.replica : '';
}
