/**
 * The account-ownership protocol as pure transitions (docs/architecture.md#account-ownership): who may hold an
 * account, decided from the account's record (the cluster its name belongs to) and its lease (who holds it, until
 * when, under which generation) at the store's clock. Every store applies these transitions atomically — the memory
 * store within one synchronous step, MySQL and PostgreSQL under the lease row's lock with a compare-and-set on the
 * generation — so every replica sharing a store takes the same decision for the same state, and none decides from
 * what it alone remembers or from its own wall clock.
 */
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
}

export type ClaimOutcome =
  | { granted: true; lease: AccountLease; previous?: AccountLease | undefined }
  | { granted: false; code: 'cluster_conflict'; record: ClusterClaim }
  | { granted: false; code: 'standby'; holder: AccountLease };

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
 * The claim's outcome from the account's record and lease at `now`: a name belongs to one cluster while its record
 * exists (another cluster is refused, the original keeps working); another agent (agentId) holding it through a live
 * lease keeps it and the claimant stands by, unless the holder is lost (holderLost); the same agent coming back
 * through a new stream is a reconnect and takes the account over from its stale stream.
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
    return { granted: false, code: 'standby', holder: lease };
  }
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
    },
  };
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
