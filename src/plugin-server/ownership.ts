/**
 * The account-ownership protocol as pure transitions (docs/architecture.md#account-ownership): who may hold an
 * account, decided from the account's record (the cluster its name belongs to) and its lease (who holds it, until
 * when, under which generation) at the store's clock. Every store applies these transitions atomically — the memory
 * store within one synchronous step, MySQL and PostgreSQL under the lease row's lock with a compare-and-set on the
 * generation — so every replica sharing a store takes the same decision for the same state, and none decides from
 * what it alone remembers or from its own wall clock.
 */
import { createHash } from 'node:crypto';
import { ScaleAgentError } from '../shared/errors.js';

/** Who holds an account, shared by every replica on the store. */
export interface AccountLease {
  account: string;
  /** Id of the replica holding it (unique per process). */
  replica: string;
  /** That replica's REST base URL as its peers reach it ('' when not advertised). */
  replicaUrl: string;
  sessionId: string;
  agentId: string;
  state: 'ACTIVE' | 'FAILED';
  /**
   * The fencing token: raised by every grant, so a holder that lost the account (taken over, expired) cannot renew,
   * report or remove it by matching an older generation.
   */
  generation: number;
  /** ms at the store's clock; live while expiresAt > now and releasedAt is 0. */
  expiresAt: number;
  /** ms at the store's clock when its stream ended (0 while held). */
  releasedAt: number;
  /** ms at the store's clock since the holder reports the account FAILED (0 while ACTIVE). */
  failedAt: number;
  /** Whether the holding agent shares its group's accounts with the group's other agents (Hello.share_load). */
  shareLoad: boolean;
  /**
   * The agent of the group that ranks first for the account (placementRank) and asked for it while this lease's
   * agent held it: the holder's replica asks its agent to hand the account over, and once the lease ends it stays
   * reserved for that agent for one lease period (decideClaim). '' when none asked.
   */
  handoffTo: string;
}

/** A holder as the store fences it: the stream (replica and session) and the generation it was granted. */
export interface LeaseHolder {
  replica: string;
  sessionId: string;
  generation: number;
}

/**
 * The fencing token of one cache write: the stream writing (replica and session) and, for each account the write
 * touches, the lease generation the stream was granted. A store given one applies the write only while every one of
 * those leases is still the stream's and live, judged at the store's clock atomically with the write (fencedOut).
 */
export interface WriteFence {
  replica: string;
  sessionId: string;
  /** account → the generation the stream holds it under. */
  generations: ReadonlyMap<string, number>;
}

/** The accounts of `fence` whose lease its stream no longer holds at `now`: the store refuses the write. */
export function fencedOut(
  fence: WriteFence,
  leaseOf: (account: string) => AccountLease | undefined,
  now: number,
): string[] {
  const out: string[] = [];
  for (const [account, generation] of fence.generations) {
    const holder = { replica: fence.replica, sessionId: fence.sessionId, generation };
    if (!heldBy(leaseOf(account), holder, now)) out.push(account);
  }
  return out;
}

/**
 * A write the store refused because its stream lost the lease of these accounts (taken over, expired, removed):
 * nothing of it was written. UNAVAILABLE: the stream is closed naming them and its agent reconnects, to hold the
 * account again or be told it stands by.
 */
export class LeaseLost extends ScaleAgentError {
  constructor(readonly accounts: readonly string[]) {
    super(
      'UNAVAILABLE',
      `write refused by the store: this stream no longer holds the lease of account ${accounts.join(', ')}`,
    );
    this.name = 'LeaseLost';
  }
}

/** The cluster an account name belongs to while its record exists. */
export interface ClusterClaim {
  agentId: string;
  apiServerHost: string;
  /** Lower-case hex. */
  caFingerprint: string;
}

/** A stream asking to hold an account for an agent. */
export interface LeaseClaim {
  account: string;
  replica: string;
  replicaUrl: string;
  sessionId: string;
  agentId: string;
  cluster: { host: string; fingerprint: string };
  /** How long the granted lease lasts without renewal. */
  leaseMs: number;
  /** How long a holder may report the account FAILED before another agent of the group may take it over. */
  failedHandoverMs: number;
  /** The claiming agent shares its group's accounts (Hello.share_load). */
  shareLoad: boolean;
}

/**
 * standby with `handoff`: the store writes that lease (the holder's, with handoffTo set to the claimant) in the same
 * atomic step, for the holder's replica to act on.
 */
export type ClaimOutcome =
  | { granted: true; lease: AccountLease; previous?: AccountLease | undefined }
  | { granted: false; code: 'cluster_conflict'; record: ClusterClaim }
  | { granted: false; code: 'standby'; holder: AccountLease; handoff?: AccountLease | undefined };

/**
 * The agent's weight for the account in rendezvous (highest-random-weight) hashing: of the agents of a group that
 * offer an account, the one of highest rank is its preferred holder. Every replica computes it alike from the two
 * names alone, and an agent joining or leaving moves only the accounts it ranks first for (about 1/n of them).
 */
export function placementRank(account: string, agentId: string): bigint {
  return createHash('sha256').update(account).update('\0').update(agentId).digest().readBigUInt64BE(0);
}

/** Whether agent `a` ranks above agent `b` for the account (ties, vanishingly rare, go to the greater id). */
export function outranks(account: string, a: string, b: string): boolean {
  const ra = placementRank(account, a);
  const rb = placementRank(account, b);
  return ra !== rb ? ra > rb : a > b;
}

/** The agent of `agentIds` that ranks first for the account; undefined when there is none. */
export function preferredAgent(account: string, agentIds: Iterable<string>): string | undefined {
  let best: string | undefined;
  for (const id of agentIds) if (best === undefined || outranks(account, id, best)) best = id;
  return best;
}

export function leaseLive(l: AccountLease, now: number): boolean {
  return l.releasedAt === 0 && l.expiresAt > now;
}

/** When the lease stopped holding its account: released by its stream, or expired unrenewed, whichever came first. */
export function leaseEndedAt(l: AccountLease): number {
  return l.releasedAt === 0 ? l.expiresAt : Math.min(l.releasedAt, l.expiresAt);
}

/**
 * Whether an orphaned account's grace period is over at the store's `now`: its lease is not live and ended at least
 * `graceMs` ago. An account with no lease row (none ever granted through this store) has no time the store can
 * judge: the sweeping replica's own view of how long it has been ORPHANED decides, as it did before any was stamped.
 */
export function orphanGraceOver(l: AccountLease | undefined, graceMs: number, now: number): boolean {
  if (l === undefined) return true;
  return !leaseLive(l, now) && now - leaseEndedAt(l) >= graceMs;
}

/** Whether `holder` still holds the lease at `now`: the fence every holder-side write passes. */
export function heldBy(l: AccountLease | undefined, holder: LeaseHolder, now: number): l is AccountLease {
  return (
    l !== undefined &&
    leaseLive(l, now) &&
    l.replica === holder.replica &&
    l.sessionId === holder.sessionId &&
    l.generation === holder.generation
  );
}

/**
 * Whether the account has lost its holder at `now` for anyone waiting for it: no live lease (released, expired), or
 * its holder has reported it FAILED for `failedHandoverMs`.
 */
export function holderLost(l: AccountLease | undefined, now: number, failedHandoverMs: number): boolean {
  if (!l || !leaseLive(l, now)) return true;
  return l.state === 'FAILED' && l.failedAt > 0 && now - l.failedAt >= failedHandoverMs;
}

/**
 * Whether a lease that ended is still kept for the agent it was handed to: for one lease period after it ended, so
 * the agent its holder released it for claims it before the holder's own offer (made at once, to stand by) takes it
 * back, and no longer, so an agent that died meanwhile does not keep it unheld.
 */
function reservedFor(l: AccountLease, now: number, leaseMs: number): string | undefined {
  if (l.handoffTo === '' || leaseLive(l, now)) return undefined;
  return now < leaseEndedAt(l) + leaseMs ? l.handoffTo : undefined;
}

/**
 * The claim's outcome from the account's record and lease at `now`: a name belongs to one cluster while its record
 * exists (another cluster is refused, the original keeps working); another agent (agentId) holding it through a live
 * lease keeps it and the claimant stands by, unless the holder is lost (holderLost); the same agent coming back
 * through a new stream is a reconnect and takes the account over from its stale stream. Between agents that share
 * load, a standby that outranks the live holder (placementRank) asks for a handoff, recorded on the lease; a lease
 * that ended with a handoff asked is reserved for that agent for one lease period (reservedFor).
 */
export function decideClaim(
  claim: LeaseClaim,
  current: { record?: ClusterClaim | undefined; lease?: AccountLease | undefined },
  now: number,
): ClaimOutcome {
  const { record, lease } = current;
  if (record && (record.apiServerHost !== claim.cluster.host || record.caFingerprint !== claim.cluster.fingerprint)) {
    return { granted: false, code: 'cluster_conflict', record };
  }
  if (lease && lease.agentId !== claim.agentId && !holderLost(lease, now, claim.failedHandoverMs)) {
    return { granted: false, code: 'standby', holder: lease, handoff: handoffRequest(claim, lease) };
  }
  const reserved = lease && reservedFor(lease, now, claim.leaseMs);
  if (lease && reserved !== undefined && reserved !== claim.agentId) {
    return { granted: false, code: 'standby', holder: lease };
  }
  const reconnect = lease !== undefined && lease.agentId === claim.agentId && leaseLive(lease, now);
  return {
    granted: true,
    previous: lease,
    lease: {
      account: claim.account,
      replica: claim.replica,
      replicaUrl: claim.replicaUrl,
      sessionId: claim.sessionId,
      agentId: claim.agentId,
      state: 'ACTIVE',
      generation: (lease?.generation ?? 0) + 1,
      expiresAt: now + claim.leaseMs,
      releasedAt: 0,
      failedAt: 0,
      shareLoad: claim.shareLoad,
      // A reconnect keeps the handoff asked of it (the agent that asked stands by silently and would not ask again).
      handoffTo: reconnect && claim.shareLoad ? lease.handoffTo : '',
    },
  };
}

/**
 * The holder's lease with a handoff asked for the claimant, when both share load, the claimant ranks above the
 * holder and above any agent that asked before it; undefined when nothing is to be written.
 */
function handoffRequest(claim: LeaseClaim, lease: AccountLease): AccountLease | undefined {
  if (!claim.shareLoad || !lease.shareLoad || lease.handoffTo === claim.agentId) return undefined;
  if (!outranks(claim.account, claim.agentId, lease.agentId)) return undefined;
  if (lease.handoffTo !== '' && !outranks(claim.account, claim.agentId, lease.handoffTo)) return undefined;
  return { ...lease, handoffTo: claim.agentId };
}

/** The lease after its holder reports the account's state; undefined when `holder` no longer holds it. */
export function reportState(
  l: AccountLease | undefined,
  holder: LeaseHolder,
  state: 'ACTIVE' | 'FAILED',
  now: number,
): AccountLease | undefined {
  if (!heldBy(l, holder, now)) return undefined;
  const failedAt = state === 'FAILED' ? l.failedAt || now : 0;
  return { ...l, state, failedAt };
}

/** The lease renewed by its replica; undefined when not the replica's or no longer live (it must claim again). */
export function renew(l: AccountLease, replica: string, leaseMs: number, now: number): AccountLease | undefined {
  if (l.replica !== replica || !leaseLive(l, now)) return undefined;
  return { ...l, expiresAt: now + leaseMs };
}

/** The lease once its stream ended; undefined when the stream no longer holds it (another holder's is kept). */
export function release(l: AccountLease, replica: string, sessionId: string, now: number): AccountLease | undefined {
  if (l.replica !== replica || l.sessionId !== sessionId || l.releasedAt !== 0) return undefined;
  return { ...l, releasedAt: now };
}
