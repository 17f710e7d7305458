/**
 * Which of the accounts an agent offers on its stream (in Hello or an AccountsUpdate) it may hold: the checks in
 * order — listed once, not an upstream Clouddriver's name (front mode), allowed by the gate (authorization and
 * dynamic accounts), then the registry's decision (name valid, same cluster, no other agent of the group holding
 * it) — each refusal with a code, and for each accepted account the resume points the agent may watch from.
 * The decisions before the registry's are a pure function (admit); the registry's is the one write.
 */
import type { Logger } from '../shared/logging.js';
import type { Account, ResumePoint } from '../shared/proto.js';
import type { AccountRegistry, RegistrationResult } from './accounts.js';
import type { ObjectCache } from './cache/store.js';
import type { PluginServerMetrics } from './metrics.js';
import type { GatedSession, GateVerdict, SessionGate } from './session-gate.js';

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

export interface RegistrationDeps {
  accounts: Pick<AccountRegistry, 'register'>;
  store: Pick<ObjectCache, 'resumePoints'>;
  metrics: Pick<PluginServerMetrics, 'accountRejections'>;
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
