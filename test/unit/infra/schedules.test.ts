/**
 * The schedule planner and the ownership judge of test/infra/schedules, without processes: a seed reproduces its plan,
 * plans keep replica faults apart, and each invariant the judge enforces fires on a round that breaks it (and only
 * once the condition outlasts its bound).
 */
import { describe, expect, it } from 'vitest';
import { OwnershipJudge, type ReplicaSeen, type World } from '../../infra/schedules/ownership-judge.js';
import { REPLICA_FAULT_ROWS } from '../../infra/schedules/fault-rows.js';
import { planSchedule, type ScheduleShape, type Step } from '../../infra/schedules/schedule.js';

const SHAPE: ScheduleShape = { replicas: 3, groups: 2, agentsPerGroup: 2, durationMs: 20_000, leaseSeconds: 3 };

describe('planSchedule', () => {
  it('the same seed gives the same plan; other seeds give other plans', () => {
    expect(planSchedule(7, SHAPE)).toEqual(planSchedule(7, SHAPE));
    const plans = new Set([1, 2, 3, 4, 5].map((s) => JSON.stringify(planSchedule(s, SHAPE))));
    expect(plans.size).toBe(5);
  });

  it('starts every agent once, within the first two seconds', () => {
    const starts = planSchedule(3, SHAPE).filter((s) => s.do === 'start-agent');
    expect(starts.map((s) => `${s.group}-${s.member}`).sort()).toEqual(['0-0', '0-1', '1-0', '1-1']);
    expect(starts.every((s) => s.at <= 2_000)).toBe(true);
  });

  it('never disturbs two replicas at once, and deletes only dynamic accounts it created before', () => {
    for (let seed = 1; seed <= 200; seed++) {
      const plan = planSchedule(seed, SHAPE);
      const replicaFaults = plan.filter((s) =>
        ['restart-replica', 'kill-holder-replica', 'partition', 'skew'].includes(s.do),
      );
      for (const [i, s] of replicaFaults.entries()) {
        const next = replicaFaults[i + 1];
        if (next) expect(next.at, `seed ${seed}`).toBeGreaterThanOrEqual(s.at + ('holdMs' in s ? s.holdMs : 0));
      }
      const created = new Set<string>();
      for (const s of plan) {
        if (s.do === 'create-dynamic') created.add(s.name);
        if (s.do === 'delete-dynamic') expect(created.has(s.name), `seed ${seed}`).toBe(true);
      }
      for (const s of plan.filter((x): x is Extract<Step, { do: 'partition' }> => x.do === 'partition')) {
        expect(s.holdMs).toBe(2 * SHAPE.leaseSeconds * 1000);
      }
    }
  });

  it('over many seeds, draws every kind of fault', () => {
    const kinds = new Set(Array.from({ length: 50 }, (_, i) => planSchedule(i + 1, SHAPE).map((s) => s.do)).flat());
    expect([...kinds].sort()).toEqual([
      'create-dynamic',
      'delete-dynamic',
      'impostor',
      'kill-active-agent',
      'kill-holder-replica',
      'partition',
      'restart-replica',
      'skew',
      'start-agent',
    ]);
  });
});

describe('OwnershipJudge', () => {
  const LEASE = 3_000;
  const GRACE = 15_000;
  const world = (over: Partial<World> = {}): World => ({
    groups: [{ account: 'acc', agents: ['a1', 'a2'], kubeHost: 'h:1' }],
    dynamic: new Map(),
    allAgents: ['a1', 'a2'],
    ...over,
  });
  const held = (replica: string, agentId: string, over: Partial<ReplicaSeen> = {}): ReplicaSeen => ({
    replica,
    disturbed: false,
    accounts: [{ name: 'acc', state: 'ACTIVE', agentId, kubeHost: 'h:1', heldBy: 'local' }],
    sessions: [{ agentId, accounts: ['acc'] }],
    ...over,
  });
  const standby = (replica: string, agentId: string, holder: string): ReplicaSeen => ({
    replica,
    disturbed: false,
    accounts: [{ name: 'acc', state: 'ACTIVE', agentId: holder, kubeHost: 'h:1' }],
    sessions: [{ agentId, accounts: [], rejectedAccounts: [{ name: 'acc', reason: `standby: held by ${holder}` }] }],
  });
  /** The same round observed at each time in `times`. */
  const play = (j: OwnershipJudge, w: World, times: number[], round: ReplicaSeen[]) => {
    for (const t of times) j.observe(t, w, round);
  };

  it('a holder and a standby on two replicas is fine however long it lasts', () => {
    const j = new OwnershipJudge(LEASE, GRACE);
    play(j, world(), [0, 5_000, 60_000], [held('r0', 'a1'), standby('r1', 'a2', 'a1')]);
    expect(j.violations).toEqual([]);
  });

  it('ORPHANED while an agent of the group is connected: a violation once it outlasts twice the lease', () => {
    const j = new OwnershipJudge(LEASE, GRACE);
    const orphaned: ReplicaSeen = {
      replica: 'r1',
      disturbed: false,
      accounts: [{ name: 'acc', state: 'ORPHANED', agentId: 'a1', kubeHost: 'h:1' }],
      sessions: [],
    };
    play(j, world(), [0, 1_000, 6_000], [held('r0', 'a1'), orphaned]);
    expect(j.violations).toEqual([]);
    play(j, world(), [6_001], [held('r0', 'a1'), orphaned]);
    expect(j.violations).toMatchObject([
      { kind: 'orphaned-while-served', account: 'acc', replica: 'r1', forMs: 6_001 },
    ]);
  });

  it('ORPHANED with no agent of the group connected anywhere is no violation', () => {
    const j = new OwnershipJudge(LEASE, GRACE);
    const orphaned: ReplicaSeen = {
      replica: 'r0',
      disturbed: false,
      accounts: [{ name: 'acc', state: 'ORPHANED', agentId: 'a1', kubeHost: 'h:1' }],
      sessions: [],
    };
    play(j, world(), [0, 1_000, 60_000], [orphaned]);
    expect(j.violations).toEqual([]);
  });

  it('an account gone from a replica while served is removed-while-served; a disturbed replica is not judged', () => {
    const j = new OwnershipJudge(LEASE, GRACE);
    const gone: ReplicaSeen = { replica: 'r1', disturbed: false, accounts: [], sessions: [] };
    play(j, world(), [0, 7_000], [held('r0', 'a1'), gone]);
    expect(j.violations.map((v) => v.kind)).toEqual(['removed-while-served']);
    const k = new OwnershipJudge(LEASE, GRACE);
    play(k, world(), [0, 7_000], [held('r0', 'a1'), { ...gone, disturbed: true }]);
    expect(k.violations).toEqual([]);
  });

  it('a dynamic account unknown to a replica counts from its answered create', () => {
    const j = new OwnershipJudge(LEASE, GRACE);
    const w = world({ dynamic: new Map([['dyn', 0]]) });
    const withDyn = (r: ReplicaSeen): ReplicaSeen => ({
      ...r,
      accounts: [...r.accounts!, { name: 'dyn', state: 'ACTIVE', agentId: 'a1' }],
    });
    play(j, w, [6_500], [withDyn(held('r0', 'a1')), standby('r1', 'a2', 'a1')]);
    expect(j.violations).toMatchObject([{ kind: 'removed-while-served', account: 'dyn', replica: 'r1' }]);
  });

  it('an agent whose offer is neither held nor standing by is flagged after a lease', () => {
    const j = new OwnershipJudge(LEASE, GRACE);
    const demoted: ReplicaSeen = {
      replica: 'r1',
      disturbed: false,
      accounts: [{ name: 'acc', state: 'ACTIVE', agentId: 'a1', kubeHost: 'h:1' }],
      sessions: [{ agentId: 'a2', accounts: [] }],
    };
    play(j, world(), [0, 3_000], [held('r0', 'a1'), demoted]);
    expect(j.violations).toEqual([]);
    play(j, world(), [3_100], [held('r0', 'a1'), demoted]);
    expect(j.violations).toMatchObject([{ kind: 'neither-holder-nor-standby', agent: 'a2', replica: 'r1' }]);
  });

  it('two streams holding one account are two writers', () => {
    const j = new OwnershipJudge(LEASE, GRACE);
    play(j, world(), [0, 4_000], [held('r0', 'a1'), held('r1', 'a2')]);
    expect(j.violations.map((v) => v.kind)).toEqual(['two-writers']);
  });

  it('replicas showing two clusters under one name; the impostor may own the name if it registered first', () => {
    const w = world({
      groups: [{ account: 'acc', agents: ['a1', 'a2'], kubeHost: 'h:1', impostor: { agentId: 'x', kubeHost: 'h:2' } }],
    });
    const j = new OwnershipJudge(LEASE, GRACE);
    const other = held('r1', 'x');
    other.accounts![0]!.kubeHost = 'h:2';
    play(j, w, [0, 4_000], [held('r0', 'a1'), other]);
    expect(j.violations.map((v) => v.kind).sort()).toEqual(['two-clusters', 'two-clusters', 'two-writers']);

    // The impostor first: the group's agents are rightly refused, and nothing is flagged.
    const k = new OwnershipJudge(LEASE, GRACE);
    const refused: ReplicaSeen = {
      replica: 'r0',
      disturbed: false,
      accounts: [{ name: 'acc', state: 'ACTIVE', agentId: 'x', kubeHost: 'h:2' }],
      sessions: [
        {
          agentId: 'a1',
          accounts: [],
          rejectedAccounts: [{ name: 'acc', reason: 'account name acc is already registered' }],
        },
      ],
    };
    play(k, w, [0, 60_000], [other, refused]);
    expect(k.violations).toEqual([]);
  });
});

describe('REPLICA_FAULT_ROWS', () => {
  it('each row gets names of its own (account names and agentIds are made from the id)', () => {
    const prefixes = REPLICA_FAULT_ROWS.map((r) => r.id.replace(/[^a-z0-9]/g, ''));
    expect(new Set(prefixes).size).toBe(prefixes.length);
  });
});

describe('OwnershipJudge, a name removed and registered again', () => {
  it('a name gone from every replica is free: another cluster registering it then is not two clusters', () => {
    const w: World = {
      groups: [{ account: 'acc', agents: ['a1'], kubeHost: 'h:1', impostor: { agentId: 'x', kubeHost: 'h:2' } }],
      dynamic: new Map(),
      allAgents: ['a1'],
    };
    const seen = (host: string, agentId: string): ReplicaSeen => ({
      replica: 'r0',
      disturbed: false,
      accounts: [{ name: 'acc', state: 'ACTIVE', agentId, kubeHost: host, heldBy: 'local' }],
      sessions: [{ agentId, accounts: ['acc'] }],
    });
    const j = new OwnershipJudge(3_000, 15_000);
    j.observe(0, w, [seen('h:2', 'x')]);
    j.observe(1_000, w, [{ replica: 'r0', disturbed: false, accounts: [], sessions: [] }]);
    j.observe(2_000, w, [seen('h:1', 'a1')]);
    j.observe(60_000, w, [seen('h:1', 'a1')]);
    expect(j.violations).toEqual([]);
  });
});

describe('OwnershipJudge, the other cluster first (seed 3)', () => {
  const w: World = {
    groups: [{ account: 'acc', agents: ['a1', 'a2'], kubeHost: 'h:1', impostor: { agentId: 'x', kubeHost: 'h:2' } }],
    dynamic: new Map(),
    allAgents: ['a1', 'a2'],
  };
  const conflict = { name: 'acc', reason: 'account name acc is already registered by agent x for cluster h:2' };
  /** a1 and a2 connected and refused for x's cluster, on r1; r0 shows the account as `account` says. */
  const round = (accounts: ReplicaSeen['accounts'], xConnected: boolean): ReplicaSeen[] => [
    {
      replica: 'r0',
      disturbed: false,
      accounts,
      sessions: xConnected ? [{ agentId: 'x', accounts: ['acc'] }] : [],
    },
    {
      replica: 'r1',
      disturbed: false,
      accounts,
      sessions: [
        { agentId: 'a1', accounts: [], rejectedAccounts: [conflict] },
        { agentId: 'a2', accounts: [], rejectedAccounts: [conflict] },
      ],
    },
  ];

  it('once the other cluster left and its record is gone, the refused agents must take the name back', () => {
    const j = new OwnershipJudge(3_000, 15_000);
    const held = [{ name: 'acc', state: 'ACTIVE', agentId: 'x', kubeHost: 'h:2' }];
    const orphaned = [{ name: 'acc', state: 'ORPHANED', agentId: 'x', kubeHost: 'h:2' }];
    // x holds the name: its group's agents are rightly refused.
    for (let t = 0; t <= 5_000; t += 250) j.observe(t, w, round(held, true));
    // x gone: the name is x's cluster's for the grace period (its agent may come back), so nobody else takes it.
    for (let t = 5_250; t <= 20_000; t += 250) j.observe(t, w, round(orphaned, false));
    expect(j.violations).toEqual([]);
    // Removed after the grace period, the name is free: a1 and a2, still refused, leave it unserved.
    for (let t = 20_250; t <= 40_000; t += 250) j.observe(t, w, round([], false));
    expect(new Set(j.violations.map((v) => v.kind))).toEqual(
      new Set(['removed-while-served', 'neither-holder-nor-standby']),
    );
  });

  it('taken back by its own cluster sooner than every replica showed it gone: two clusters only before the grace period', () => {
    const heldBy = (agentId: string, host: string) => [
      { name: 'acc', state: 'ACTIVE', agentId, kubeHost: host, heldBy: { replica: 'r0' } },
    ];
    const ownAgain: ReplicaSeen[] = [
      {
        replica: 'r0',
        disturbed: false,
        accounts: heldBy('a1', 'h:1'),
        sessions: [{ agentId: 'a1', accounts: ['acc'] }],
      },
      { replica: 'r1', disturbed: false, accounts: heldBy('a1', 'h:1'), sessions: [] },
    ];
    const orphaned = [{ name: 'acc', state: 'ORPHANED', agentId: 'x', kubeHost: 'h:2' }];
    for (const [xLeftFor, flagged] of [
      [15_000, false],
      [5_000, true],
    ] as const) {
      const j = new OwnershipJudge(3_000, 15_000);
      for (let t = 0; t <= 5_000; t += 250) j.observe(t, w, round(heldBy('x', 'h:2'), true));
      for (let t = 5_250; t < 5_000 + xLeftFor; t += 250) j.observe(t, w, round(orphaned, false));
      for (let t = 5_000 + xLeftFor; t <= 40_000 + xLeftFor; t += 250) j.observe(t, w, ownAgain);
      expect(
        j.violations.some((v) => v.kind === 'two-clusters'),
        `x gone ${xLeftFor} ms`,
      ).toBe(flagged);
    }
  });

  it('a record of the other cluster kept alive with nobody behind it: unserved while its own agents are refused', () => {
    const j = new OwnershipJudge(3_000, 15_000);
    // Shown held through r0 (a lease still renewed there), yet no stream on any replica holds it.
    const ghost = [{ name: 'acc', state: 'ACTIVE', agentId: 'x', kubeHost: 'h:2', heldBy: { replica: 'r0' } }];
    for (let t = 0; t <= 5_000; t += 250) j.observe(t, w, round(ghost, true));
    for (let t = 5_250; t <= 26_000; t += 250) j.observe(t, w, round(ghost, false));
    expect(j.violations).toEqual([]);
    for (let t = 26_250; t <= 27_000; t += 250) j.observe(t, w, round(ghost, false));
    expect(j.violations).toMatchObject([{ kind: 'unserved-while-refused', account: 'acc', sinceMs: 5_250 }]);
  });
});
