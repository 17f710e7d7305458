/**
 * Which of the accounts an agent offers on its stream (in Hello or an AccountsUpdate) it may hold: the checks in
 * order — listed once, not an upstream Clouddriver's name (front mode), allowed by the gate (authorization and
 * dynamic accounts), then the registry's decision (name valid, same cluster, no other agent of the group holding
 * it) — each refusal with a code, and for each accepted account the resume points the agent may watch from.
 * The decisions are pure functions (admit here, then the store's claim by ownership.ts decideClaim, which the
 * registry asks for): the claim is the one side effect, a compare-and-set in the store.
 */
import type { Counter } from 'prom-client';
import type { Logger } from '../shared/logging.js';
import type { Account, ResumePoint } from '../shared/proto.js';
import type { ObjectCache } from './cache/store.js';
import type { ClaimOutcome } from './ownership.js';
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

/** Refused when the name is not a valid account name (checked before anything is claimed). */
export function validAccountName(offer: HolderOffer): RegistrationResult | undefined {
  if (ACCOUNT_NAME.test(offer.name)) return undefined;
  return { accepted: false, code: 'invalid_name', reason: `invalid account name ${JSON.stringify(offer.name)}` };
}

/**
 * What the agent is told of the store's answer to its claim (ownership.ts decideClaim): an account name belongs to
 * one cluster (another cluster claiming it is refused and the original keeps working); another agent of the group
 * holding it keeps it — one writer per account — and this one stands by until the holder is lost.
 */
export function claimResult(offer: HolderOffer, outcome: ClaimOutcome, replica: string): RegistrationResult {
  if (outcome.granted) return { accepted: true };
  if (outcome.code === 'cluster_conflict') {
    const r = outcome.record;
    return {
      accepted: false,
      code: 'cluster_conflict',
      reason:
        `account name ${offer.name} is already registered by agent ${r.agentId} for cluster ` +
        `${r.apiServerHost} (CA ${shortFingerprint(r.caFingerprint)}); this agent ` +
        `offers cluster ${offer.host} (CA ${shortFingerprint(offer.fingerprint)})`,
    };
  }
  const h = outcome.holder;
  return {
    accepted: false,
    code: 'standby',
    reason:
      `standby: account ${offer.name} is held by agent ${h.agentId}` +
      `${h.replica !== replica ? ` on replica ${h.replica}` : ''}; this agent takes over when it leaves`,
  };
}

function shortFingerprint(f: string): string {
  return f ? `${f.slice(0, 16)}…` : 'none';
}

export interface RegistrationDeps {
  /** The registry (accounts.ts): decides with decideHolder, then writes the lease and the record. */
  accounts: {
    register(
      session: { id: string; agentId: string; shareLoad: boolean },
      account: Account,
    ): Promise<RegistrationResult>;
  };
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
    private readonly session: GatedSession & { readonly shareLoad: boolean },
  ) {}

  /** The agent handed the account over at the server's request: this stream stands by for it. */
  handedOver(name: string): { name: string; reason: string } {
    const reason = `standby: account ${name} handed over to the agent of this group that ranks first for it`;
    this.refused.set(name, { code: 'standby', reason });
    this.standbyFor.add(name);
    return { name, reason };
  }

  /** Accounts refused on this stream, with the reason the agent was given. */
  refusals(): { name: string; reason: string; code: RefusalCode }[] {
    return [...this.refused].map(([name, r]) => ({ name, reason: r.reason, code: r.code }));
  }

  /** Why `name` was last refused on this stream; undefined when it was not (or was accepted since). */
  refusedAs(name: string): RefusalCode | undefined {
    return this.refused.get(name)?.code;
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
        const r = await deps.accounts.register(
          { id: session.id, agentId: session.agentId, shareLoad: session.shareLoad },
          account,
        );
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
