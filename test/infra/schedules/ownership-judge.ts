/**
 * The invariants of account ownership across replicas, judged from what every replica answers on /armory/accounts and
 * /armory/agents, polled throughout a schedule (ownership-checker.ts polls, this decides). Pure: rounds in, violations
 * out, time from the caller, so each rule has a unit test.
 *
 * A violation is a condition that holds on every poll for longer than the protocol's bound for it, not a single poll:
 * replicas are read one after another, so a hand-over can look like two holders, or none, for one round.
 * - orphaned-while-served: an account ORPHANED on a replica while an agent that may serve it is connected, for longer
 *   than twice the lease (the latest a peer can see a lost holder, plus the promotion of a standby);
 * - removed-while-served: an account the install knows (registered, or a dynamic account whose create was answered)
 *   missing from a replica while an agent that may serve it is connected, for longer than twice the lease;
 * - unserved-while-refused: a name another cluster's agent registered first, held by no stream while that agent is
 *   gone and agents of the name's own cluster (refused while it held it) are connected, for longer than the grace
 *   period plus twice the lease (the other cluster's record is removed after the grace period, and the name is then
 *   theirs to take);
 * - two-clusters: replicas showing one account name for two clusters (API server host and CA), or a name showing a
 *   cluster other than the one that registered it first;
 * - two-writers: two agent streams holding one account;
 * - neither-holder-nor-standby: a connected agent offering an account it is neither holding nor standing by for.
 * The last three must not last beyond one lease (every replica learns of a change within one renewal).
 */

export interface AccountSeen {
  name: string;
  state: string;
  agentId: string;
  kubeHost?: string;
  certFingerprint?: string;
  heldBy?: unknown;
}

export interface SessionSeen {
  agentId: string;
  /** Accounts this stream holds. */
  accounts: string[];
  rejectedAccounts?: { name: string; reason: string }[];
}

/** One replica's answers in a round; `undefined` lists: it did not answer (down, restarting, partitioned away). */
export interface ReplicaSeen {
  replica: string;
  /** The schedule is doing something to it (killed, restarting, link cut): its answers are not judged. */
  disturbed: boolean;
  accounts?: AccountSeen[];
  /** Streams ending on this replica (heldBy local). */
  sessions?: SessionSeen[];
}

/** What the harness knows of the world at the time of the round. */
export interface World {
  /**
   * Static accounts: the agent group serving each (its agentIds) and its cluster's host; an impostor is an agent of
   * another cluster offering the same name (which cluster owns the name is whichever registered it first).
   */
  groups: { account: string; agents: string[]; kubeHost: string; impostor?: { agentId: string; kubeHost: string } }[];
  /** Dynamic accounts whose create was answered and which were not deleted since: name → when the create was answered. */
  dynamic: Map<string, number>;
  /** Every agentId that may serve a dynamic account (no zones: any agent). */
  allAgents: string[];
}

export interface Violation {
  kind:
    | 'orphaned-while-served'
    | 'removed-while-served'
    | 'unserved-while-refused'
    | 'two-clusters'
    | 'two-writers'
    | 'neither-holder-nor-standby';
  account: string;
  replica?: string;
  agent?: string;
  /** When the condition was first seen and how long it had lasted when it became a violation. */
  sinceMs: number;
  forMs: number;
  detail: string;
}

export class OwnershipJudge {
  /** condition key → when first seen, in the current unbroken run of rounds. */
  private readonly since = new Map<string, number>();
  /** Static accounts seen registered at least once (from then on they must not go while served). */
  private readonly registered = new Set<string>();
  private readonly reported = new Set<string>();
  /** Account name → the cluster (host) that registered it first: it owns the name. */
  private readonly owner = new Map<string, string>();
  /** agentId → when it was last seen connected. */
  private readonly lastConnected = new Map<string, number>();
  readonly violations: Violation[] = [];
  rounds = 0;

  constructor(
    private readonly leaseMs: number,
    /** How long an ORPHANED account is kept before it is removed (the plugin-server's gracePeriodSeconds). */
    private readonly gracePeriodMs: number,
  ) {}

  /**
   * Whether the cluster owning the name (`owner`, a host) has had no agent connected for the grace period: its record
   * may then have been removed and the name registered by the other cluster, sooner than every replica could show it
   * gone in between (a refused agent is asked to offer the name again at once).
   */
  private ownerGone(g: World['groups'][number], owner: string, now: number): boolean {
    const agents = g.impostor && owner === g.impostor.kubeHost ? [g.impostor.agentId] : g.agents;
    return agents.every((a) => now - (this.lastConnected.get(a) ?? -Infinity) >= this.gracePeriodMs);
  }

  observe(now: number, world: World, replicas: ReplicaSeen[]): void {
    this.rounds += 1;
    const judged = replicas.filter((r) => !r.disturbed && r.accounts && r.sessions);
    const held = new Map<string, string[]>();
    // An agent with a stream on any replica that answers is connected, a disturbed one included: a replica cut off
    // from the store still holds its agents' streams, and whether its peers then orphan their accounts is the point.
    const connected = new Set(replicas.flatMap((r) => (r.sessions ?? []).map((s) => s.agentId)));
    for (const a of connected) this.lastConnected.set(a, now);
    for (const r of judged) {
      for (const s of r.sessions!) {
        for (const a of s.accounts) held.set(a, [...(held.get(a) ?? []), `${s.agentId}@${r.replica}`]);
      }
      for (const a of r.accounts!) {
        const g = world.groups.find((x) => x.account === a.name);
        if (!g) continue;
        this.registered.add(a.name);
        const owner = this.owner.get(a.name);
        if (a.kubeHost && (!owner || (a.kubeHost !== owner && this.ownerGone(g, owner, now)))) {
          this.owner.set(a.name, a.kubeHost);
        }
      }
    }
    // A name no replica lists any more was removed (the grace period after it was orphaned): it is free again, and
    // whichever cluster registers it next owns it.
    if (judged.length) {
      for (const name of [...this.owner.keys()]) {
        if (!judged.some((r) => r.accounts!.some((a) => a.name === name))) this.owner.delete(name);
      }
    }
    /** The agents of the cluster owning the name: the group, or the impostor if it registered first. */
    const owners = (g: World['groups'][number]): string[] =>
      g.impostor && this.owner.get(g.account) === g.impostor.kubeHost ? [g.impostor.agentId] : g.agents;
    const now_: Condition[] = [];
    const servable = (account: string): string[] => {
      const g = world.groups.find((x) => x.account === account);
      return (g ? owners(g) : world.dynamic.has(account) ? world.allAgents : []).filter((a) => connected.has(a));
    };

    for (const r of judged) {
      const byName = new Map(r.accounts!.map((a) => [a.name, a]));
      const expected = [
        ...world.groups.map((g) => g.account).filter((n) => this.registered.has(n)),
        ...[...world.dynamic.keys()],
      ];
      for (const name of expected) {
        const agents = servable(name);
        if (!agents.length) continue;
        const a = byName.get(name);
        // A dynamic account the replica has not heard of yet counts from the answered create, not from this round.
        const from = world.dynamic.get(name);
        if (!a) {
          now_.push({
            key: `removed ${name} ${r.replica}`,
            bound: 2 * this.leaseMs,
            from,
            v: {
              kind: 'removed-while-served',
              account: name,
              replica: r.replica,
              detail: `connected: ${agents.join(', ')}`,
            },
          });
        } else if (a.state === 'ORPHANED') {
          now_.push({
            key: `orphaned ${name} ${r.replica}`,
            bound: 2 * this.leaseMs,
            v: {
              kind: 'orphaned-while-served',
              account: name,
              replica: r.replica,
              detail: `connected: ${agents.join(', ')}`,
            },
          });
        }
      }
      for (const g of world.groups) {
        const a = byName.get(g.account);
        const owner = this.owner.get(g.account);
        if (a?.kubeHost && owner && a.kubeHost !== owner) {
          now_.push({
            key: `cluster ${g.account} ${r.replica}`,
            bound: this.leaseMs,
            v: {
              kind: 'two-clusters',
              account: g.account,
              replica: r.replica,
              detail: `shows cluster ${a.kubeHost} (agent ${a.agentId}); ${owner} registered it first`,
            },
          });
        }
      }
      for (const s of r.sessions!) {
        for (const g of world.groups.filter((x) => owners(x).includes(s.agentId))) {
          const holds = s.accounts.includes(g.account);
          const standby = s.rejectedAccounts?.some((x) => x.name === g.account && x.reason.startsWith('standby'));
          if (holds || standby) continue;
          const why = s.rejectedAccounts?.find((x) => x.name === g.account)?.reason ?? 'neither held nor refused';
          now_.push({
            key: `neither ${g.account} ${s.agentId} ${r.replica}`,
            bound: this.leaseMs,
            v: {
              kind: 'neither-holder-nor-standby',
              account: g.account,
              agent: s.agentId,
              replica: r.replica,
              detail: why,
            },
          });
        }
      }
    }
    // The name's own cluster is eligible again once the other cluster's agent is gone: its record goes after the
    // grace period, and a refused agent is asked to offer the name again. Held by no stream on any replica that
    // answers (a record kept alive with nobody behind it included), that is a name left unserved.
    if (judged.length) {
      for (const g of world.groups) {
        if (!g.impostor || owners(g)[0] !== g.impostor.agentId || connected.has(g.impostor.agentId)) continue;
        const waiting = g.agents.filter((a) => connected.has(a));
        if (!waiting.length || held.has(g.account)) continue;
        now_.push({
          key: `unserved ${g.account}`,
          bound: this.gracePeriodMs + 2 * this.leaseMs,
          v: {
            kind: 'unserved-while-refused',
            account: g.account,
            detail: `the other cluster's agent left; connected, none holding it: ${waiting.join(', ')}`,
          },
        });
      }
    }
    const hosts = new Map<string, Set<string>>();
    for (const r of judged) {
      for (const a of r.accounts!) {
        if (!a.kubeHost) continue;
        const set = hosts.get(a.name) ?? new Set();
        set.add(`${a.kubeHost} ${a.certFingerprint ?? ''}`);
        hosts.set(a.name, set);
      }
    }
    for (const [name, set] of hosts) {
      if (set.size > 1 && (world.groups.some((g) => g.account === name) || world.dynamic.has(name))) {
        now_.push({
          key: `clusters ${name}`,
          bound: this.leaseMs,
          v: { kind: 'two-clusters', account: name, detail: [...set].join(' / ') },
        });
      }
    }
    for (const [name, holders] of held) {
      if (holders.length > 1) {
        now_.push({
          key: `writers ${name}`,
          bound: this.leaseMs,
          v: { kind: 'two-writers', account: name, detail: holders.join(', ') },
        });
      }
    }

    const keys = new Set(now_.map((c) => c.key));
    for (const k of [...this.since.keys()]) if (!keys.has(k)) this.since.delete(k);
    for (const c of now_) {
      const first = this.since.get(c.key) ?? Math.min(now, c.from ?? now);
      this.since.set(c.key, first);
      if (now - first > c.bound && !this.reported.has(c.key)) {
        this.reported.add(c.key);
        this.violations.push({ ...c.v, sinceMs: first, forMs: now - first });
      }
    }
  }
}

interface Condition {
  key: string;
  bound: number;
  /** A start earlier than the first round it was seen in (a dynamic account's answered create). */
  from?: number | undefined;
  v: Omit<Violation, 'sinceMs' | 'forMs'>;
}
