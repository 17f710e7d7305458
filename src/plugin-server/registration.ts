/**
 * Which of the accounts an agent offers on its stream (in Hello or an AccountsUpdate) it may hold: the checks in
 * order — listed once, not an upstream Clouddriver's name (front mode), allowed by the gate (authorization and
 * dynamic accounts), then the registry's decision (name valid, same cluster, no other agent of the group holding
 * it) — each refusal with a code, and for each accepted account the resume points the agent may watch from.
 * The decisions are pure functions (admit, then the registry's decideHolder); the registry's write is the one side
 * effect, where the ownership protocol's compare-and-set belongs.
 */
import type { Counter } from 'prom-client';
import type { Logger } from '../shared/logging.js';
import type { Account, ResumePoint } from '../shared/proto.js';
import type { AccountRecord, ObjectCache } from './cache/store.js';
import type { GatedSession, GateVerdict, SessionGate } from './session-gate.js';

/**
 * The registry's answer: refused for an invalid name, a name another cluster holds, or (standby) because another
 * agent of the same group holds the account through a live stream.
 */
export type RegistrationResult =
  { accepted: true } | { accepted: false; code: 'invalid_name' | 'cluster_conflict' | 'standby'; reason: string };

/** Why an offered account is not held by this stream. */
export type RefusalCode =
  | 'listed_twice'
  | 'upstream'
  | Extract<GateVerdict, { ok: false }>['code']
  | Extract<RegistrationResult, { accepted: false }>['code'];

export interface Refusal {
  code: RefusalCode;
  reason: string;
}

/**
 * The label of scale_agent_plugin_server_account_rejections_total for a refusal; undefined: not counted (a
 * standby is no error, and a name listed twice is the agent's own duplicate).
 */
export function rejectionLabel(code: RefusalCode): string | undefined {
  switch (code) {
    case 'standby':
    case 'listed_twice':
      return undefined;
    case 'cluster_conflict':
      return 'conflict';
    default:
      return code;
  }
}

/**
 * The checks before the registry's, in order; `gate` is asked only when the earlier ones pass (it may assign a
 * dynamic account to the agent as it answers).
 */
export function admit(
  name: string,
  facts: { listedTwice: boolean; upstreamClash: string | undefined; gate: () => GateVerdict },
): Refusal | undefined {
  if (facts.listedTwice) return { code: 'listed_twice', reason: 'account listed twice by this agent' };
  if (facts.upstreamClash !== undefined) return { code: 'upstream', reason: facts.upstreamClash };
  const verdict = facts.gate();
  return verdict.ok ? undefined : { code: verdict.code, reason: verdict.reason };
}

const ACCOUNT_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;

/** What an agent offers: the account name and the cluster behind it (API server host, CA fingerprint). */
export interface HolderOffer {
  name: string;
  agentId: string;
  host: string;
  /** Lower-case hex. */
  fingerprint: string;
}

/**
 * What the registry knows of an account's holder (a RegisteredAccount of accounts.ts, which imports this module).
 */
export interface KnownHolder {
  record: Pick<AccountRecord, 'agentId' | 'apiServerHost' | 'caFingerprint'>;
  /** ACTIVE, ORPHANED or FAILED. */
  state: string;
  /** This replica's session holding it, if one does. */
  sessionId?: string | undefined;
  /** The peer replica holding it, if one does. */
  peer?: { replica: string; agentId: string } | undefined;
}

/**
 * The registry's decision for an offer, given what it knows of the account: an account name belongs to one
 * cluster (another cluster claiming it is refused and the original keeps working); another agent of the group
 * (another agentId) holding it through a live stream, here or on a peer, keeps it — one writer per account — and
 * this one becomes its standby; the same agentId coming back through a new stream is a reconnect and takes the
 * account over from its stale stream, as does anyone once the account is ORPHANED.
 */
export function decideHolder(offer: HolderOffer, existing: KnownHolder | undefined): RegistrationResult {
  if (!ACCOUNT_NAME.test(offer.name)) {
    return { accepted: false, code: 'invalid_name', reason: `invalid account name ${JSON.stringify(offer.name)}` };
  }
  if (existing && !sameCluster(existing, offer)) {
    const r = existing.record;
    return {
      accepted: false,
      code: 'cluster_conflict',
      reason:
        `account name ${offer.name} is already registered by agent ${r.agentId} for cluster ` +
        `${r.apiServerHost} (CA ${shortFingerprint(r.caFingerprint)}); this agent ` +
        `offers cluster ${offer.host} (CA ${shortFingerprint(offer.fingerprint)})`,
    };
  }
  const holderAgent = existing?.peer?.agentId ?? (existing?.sessionId ? existing.record.agentId : undefined);
  if (holderAgent !== undefined && holderAgent !== offer.agentId && existing?.state !== 'ORPHANED') {
    return {
      accepted: false,
      code: 'standby',
      reason:
        `standby: account ${offer.name} is held by agent ${holderAgent}` +
        `${existing?.peer ? ` on replica ${existing.peer.replica}` : ''}; this agent takes over when it leaves`,
    };
  }
  return { accepted: true };
}

function sameCluster(existing: KnownHolder, offer: HolderOffer): boolean {
  return existing.record.apiServerHost === offer.host && existing.record.caFingerprint === offer.fingerprint;
}

function shortFingerprint(f: string): string {
  return f ? `${f.slice(0, 16)}…` : 'none';
}

export interface RegistrationDeps {
  /** The registry (accounts.ts): decides with decideHolder, then writes the lease and the record. */
  accounts: { register(session: { id: string; agentId: string }, account: Account): Promise<RegistrationResult> };
  store: Pick<ObjectCache, 'resumePoints'>;
  /** PluginServerMetrics' counter, named by its shape so this module does not depend on metrics.ts (which reads the registry). */
  metrics: { accountRejections: Pick<Counter<'reason'>, 'inc'> };
  log: Logger;
  gate?: SessionGate | undefined;
  /** Front mode: why a name may not be an agent account (the upstream Clouddriver has one of that name). */
  upstreamClash?: ((name: string) => string | undefined) | undefined;
}

export interface Offered {
  accepted: string[];
  rejected: { name: string; reason: string }[];
  resumePoints: ResumePoint[];
}

/** One stream's registrations: what it was refused and which accounts it stands by for. */
export class StreamRegistration {
  private readonly refused = new Map<string, Refusal>();
  /** Accounts this stream offered while another agent of its group held them (promoted by reconnecting). */
  readonly standbyFor = new Set<string>();

  constructor(
    private readonly deps: RegistrationDeps,
    private readonly session: GatedSession,
  ) {}

  /** Accounts refused on this stream, with the reason the agent was given. */
  refusals(): { name: string; reason: string; code: RefusalCode }[] {
    return [...this.refused].map(([name, r]) => ({ name, reason: r.reason, code: r.code }));
  }

  async offer(accounts: readonly Account[]): Promise<Offered> {
    const { deps, session } = this;
    const accepted: string[] = [];
    const rejected: { name: string; reason: string }[] = [];
    const resumePoints: ResumePoint[] = [];
    const seen = new Set<string>();
    await deps.gate?.prepare?.(accounts.map((a) => a.name));
    for (const account of accounts) {
      const name = account.name;
      let refusal = admit(name, {
        listedTwice: seen.has(name),
        upstreamClash: deps.upstreamClash?.(name),
        gate: () => deps.gate?.check(session, name) ?? { ok: true },
      });
      seen.add(name);
      if (!refusal) {
        const r = await deps.accounts.register({ id: session.id, agentId: session.agentId }, account);
        if (!r.accepted) refusal = { code: r.code, reason: r.reason };
      }
      if (refusal) {
        rejected.push({ name, reason: refusal.reason });
        if (refusal.code === 'listed_twice') continue;
        this.refused.set(name, refusal);
        if (refusal.code === 'standby') {
          // Not an error: a hot standby for an account another replica of this agent group holds.
          this.standbyFor.add(name);
          deps.log.info({ account: name, reason: refusal.reason }, 'agent is standby for the account');
          continue;
        }
        const label = rejectionLabel(refusal.code);
        if (label) deps.metrics.accountRejections.inc({ reason: label });
        deps.log.warn({ account: name, reason: refusal.reason, identity: session.identity.name }, 'account rejected');
        deps.gate?.rejected(session, name, refusal.reason);
        continue;
      }
      this.refused.delete(name);
      this.standbyFor.delete(name);
      accepted.push(name);
      for (const p of await deps.store.resumePoints(name)) {
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
}
