/**
 * The ownership protocol (docs/architecture.md#account-ownership) against a reference model over random
 * interleavings: several replicas (real AccountRegistry instances) share one real memory store on one fake clock;
 * agents of one group (cluster C1) and an impostor (cluster C2) connect, disconnect, drop the account, report it
 * FAILED, and replicas renew, sweep and die, in any order. The model is a dozen lines of rules; the implementation
 * must agree with it on every claim, and these must hold after every step:
 * - at most one agent holds the account (each stream as its own replica sees it, holder-side lease included), not
 *   counting an agent's older streams: an agent uses only its newest, and a replica drops an older one that it still
 *   counts as holding at its next renewal (checked at quiescence);
 * - every connected stream offering it is its holder, a standby, or refused for another cluster (never dropped
 *   silently);
 * - once replicas have renewed for two leases, an account some eligible connected agent offers is held, and once
 *   the grace period is over and swept, an account any connected agent offers is held (a stream refused for another
 *   cluster's record offers it again when that record is gone, as the server asks its agent to);
 * - the name never belongs to two clusters;
 * - a write a stream's replica lets through (it believes the stream holds the account) lands in the store exactly
 *   when the model's lease is that stream's and live: the store's fence refuses the others, and their stream is told.
 */
import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { LeaseLost } from '../../../src/plugin-server/ownership.js';
import { storeChange } from '../../infra/records.js';
import { account } from './helpers.js';

const LEASE_MS = 3000;
const GRACE_MS = 5000;
const AGENTS = { a1: 'c1', a2: 'c1', x: 'c2' } as const;
type AgentId = keyof typeof AGENTS;

interface Stream {
  id: string;
  agent: AgentId;
  replica: number;
  /** 'none': the agent no longer offers the account (it dropped it). */
  verdict: 'holder' | 'standby' | 'cluster_conflict' | 'none';
}

/** The reference model: the account's record (its cluster) and lease, at the store's clock. */
interface Model {
  now: number;
  cluster: string | undefined;
  lease:
    | { stream: string; agent: AgentId; replica: number; expiresAt: number; released: boolean; failedAt: number }
    | undefined;
}

const live = (m: Model) => m.lease !== undefined && !m.lease.released && m.lease.expiresAt > m.now;

function modelClaim(m: Model, s: Omit<Stream, 'verdict'>): Stream['verdict'] {
  const cluster = AGENTS[s.agent];
  if (m.cluster !== undefined && m.cluster !== cluster) return 'cluster_conflict';
  const l = m.lease;
  const failedLong = l !== undefined && l.failedAt > 0 && m.now - l.failedAt >= 3 * LEASE_MS;
  if (l && live(m) && l.agent !== s.agent && !failedLong) return 'standby';
  m.cluster = cluster;
  m.lease = {
    stream: s.id,
    agent: s.agent,
    replica: s.replica,
    expiresAt: m.now + LEASE_MS,
    released: false,
    failedAt: 0,
  };
  return 'holder';
}

class World {
  now = 1_000_000;
  readonly store = new MemoryCacheStore(() => this.now);
  readonly model: Model = { now: this.now, cluster: undefined, lease: undefined };
  readonly replicas: (AccountRegistry | undefined)[] = [];
  readonly streams = new Map<string, Stream>();
  /** Each agent's newest stream (it may have ended since): the only one its agent uses. */
  readonly latest = new Map<AgentId, string>();
  private pendingReconnects: { agent: AgentId; replica: number }[] = [];
  /** Streams asked to offer the account again on the same stream (their name is free of the other cluster). */
  private pendingOffers: string[] = [];
  private seq = 0;
  readonly log = pino({ level: 'silent' });

  async addReplica(slot: number): Promise<void> {
    const r = new AccountRegistry(this.store, this.log, {
      gracePeriodMs: GRACE_MS,
      leaseMs: LEASE_MS,
      now: () => this.now,
      monotonicNow: () => this.now,
      replica: { id: `r${slot}-${this.seq++}`, url: '' },
    });
    // What the server does with these events (server.ts): the stream is closed, and its agent reconnects.
    // An agent has one stream: a lost stream whose agent already has a newer one is a stale stream, not an agent.
    r.onLost((_, sessionId) => {
      const s = this.streams.get(sessionId);
      const newer = [...this.streams.values()].some((o) => o.agent === s?.agent && o.id !== sessionId);
      this.close(sessionId, !newer);
    });
    r.onHolderLost(() => {
      for (const s of [...this.streams.values()])
        if (s.replica === slot && s.verdict === 'standby') this.close(s.id, true);
    });
    r.onNameFree(() => {
      for (const s of this.streams.values())
        if (s.replica === slot && s.verdict === 'cluster_conflict') this.pendingOffers.push(s.id);
    });
    this.replicas[slot] = r;
    await r.load();
    this.syncModel();
  }

  /**
   * The replica's process dies: its streams end without a release (their leases expire), a new process takes the
   * slot, and each agent whose newest stream ended reconnects (an older stream was already dead to its agent).
   */
  async kill(slot: number): Promise<void> {
    for (const s of [...this.streams.values()]) {
      if (s.replica !== slot) continue;
      this.streams.delete(s.id);
      if (!this.superseded(s)) this.pendingReconnects.push({ agent: s.agent, replica: slot });
    }
    this.replicas[slot] = undefined;
    await this.addReplica(slot);
  }

  close(id: string, reconnect: boolean): void {
    const s = this.streams.get(id);
    if (!s) return;
    this.streams.delete(id);
    this.replicas[s.replica]?.release(id);
    this.syncModel();
    if (reconnect) this.pendingReconnects.push({ agent: s.agent, replica: s.replica });
  }

  async connect(agent: AgentId, replica: number): Promise<void> {
    if (!this.replicas[replica]) return;
    const id = `s${this.seq++}`;
    this.latest.set(agent, id);
    await this.offer({ id, agent, replica });
  }

  /** The stream offers the account (in its Hello, or again in an AccountsUpdate): the model decides too. */
  private async offer(base: Omit<Stream, 'verdict'>): Promise<void> {
    const r = this.replicas[base.replica];
    if (!r) return;
    const expected = modelClaim(this.model, base);
    const result = await r.register({ id: base.id, agentId: base.agent }, account('dev', `${AGENTS[base.agent]}:6443`));
    const verdict = result.accepted ? 'holder' : (result.code as Stream['verdict']);
    expect(verdict, `claim of ${base.agent} on replica ${base.replica}`).toBe(expected);
    this.streams.set(base.id, { ...base, verdict });
  }

  /**
   * The stream writes a change as ingest does: dropped when its replica does not count it as holding the account,
   * else applied with the replica's fencing token. The store must agree with the model's lease.
   */
  async write(s: Stream): Promise<void> {
    const r = this.replicas[s.replica];
    if (!r?.holds(s.id, 'dev')) return;
    this.syncModel();
    const m = this.model;
    const expected = m.lease?.stream === s.id && live(m);
    const name = `w${this.seq++}`;
    const json = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, resourceVersion: '1' } });
    let written = true;
    try {
      await this.store.apply([storeChange(name, '1', { uid: name, json })], r.writeFence(s.id, ['dev']));
    } catch (e) {
      if (!(e instanceof LeaseLost)) throw e;
      written = false;
      // What the session does (sessions.ts): the registry tells the stream, which is closed.
      r.writeRefused(s.id, e.accounts);
    }
    expect(written, `write of stream ${s.id} (${s.agent}) on replica ${s.replica}`).toBe(expected);
    const stored = await this.store.get({ account: 'dev', kind: 'ConfigMap', namespace: 'ns', name });
    expect(stored !== undefined).toBe(written);
    if (!written) expect(this.streams.has(s.id), `stream ${s.id} refused but not told`).toBe(false);
  }

  /** Reconnects the agents whose streams were closed (lost or promoted), and offers again where asked, until done. */
  async settleReconnects(): Promise<void> {
    for (let guard = 0; this.pendingReconnects.length + this.pendingOffers.length > 0 && guard < 20; guard++) {
      const todo = this.pendingReconnects;
      this.pendingReconnects = [];
      for (const p of todo) {
        const target = this.replicas[p.replica] ? p.replica : this.replicas.findIndex((x) => x !== undefined);
        if (target >= 0) await this.connect(p.agent, target);
      }
      const offers = this.pendingOffers;
      this.pendingOffers = [];
      for (const id of offers) {
        const s = this.streams.get(id);
        // A superseded stream is a dead connection (its agent uses only its newest): the request goes unanswered.
        if (s?.verdict === 'cluster_conflict' && !this.superseded(s)) await this.offer(s);
      }
    }
  }

  /** The model follows the store where the implementation acts on its own (renewals, sweeps). */
  syncModel(): void {
    this.model.now = this.now;
    const l = this.store['leases' as keyof MemoryCacheStore] as unknown as Map<
      string,
      { sessionId: string; expiresAt: number; releasedAt: number; failedAt: number }
    >;
    const stored = l.get('dev');
    if (!stored) {
      this.model.lease = undefined;
      if (!(this.store['accounts' as keyof MemoryCacheStore] as unknown as Map<string, unknown>).has('dev'))
        this.model.cluster = undefined;
      return;
    }
    if (this.model.lease && this.model.lease.stream === stored.sessionId) {
      this.model.lease.expiresAt = stored.expiresAt;
      this.model.lease.released = stored.releasedAt !== 0;
      this.model.lease.failedAt = stored.failedAt;
    }
  }

  holders(): Stream[] {
    return [...this.streams.values()].filter((s) => {
      const r = this.replicas[s.replica];
      return r !== undefined && r.holds(s.id, 'dev') && !r.holderLeaseExpired();
    });
  }

  /**
   * An agent has one stream: when it connects again, its older streams are dead connections their replicas have not
   * noticed yet (no change and no result comes from them). A replica notices at its next renewal (checked at
   * quiescence); until then it may still count such a stream as holding, which is not a second writer.
   */
  superseded(s: Stream): boolean {
    return this.latest.get(s.agent) !== s.id;
  }

  writers(): Stream[] {
    return this.holders().filter((s) => !this.superseded(s));
  }

  checkInvariants(): void {
    // Agents, not streams: an agent that reconnected elsewhere leaves a stale stream its old replica drops at its next
    // renewal; nothing comes from that stream any more.
    expect(new Set(this.writers().map((h) => h.agent)).size, 'agents holding at once').toBeLessThanOrEqual(1);
    for (const s of this.streams.values()) {
      const held = this.replicas[s.replica]?.holds(s.id, 'dev') ?? false;
      // Granted streams hold it until they are told they lost it (and then they are closed, not kept silently).
      if (s.verdict === 'holder') expect(held, `stream ${s.id} of ${s.agent} granted but not holding`).toBe(true);
      if (s.verdict !== 'holder') expect(held).toBe(false);
    }
    const records = (
      this.store['accounts' as keyof MemoryCacheStore] as unknown as Map<string, { apiServerHost: string }>
    ).get('dev');
    if (records) {
      for (const h of this.writers()) expect(records.apiServerHost).toBe(`${AGENTS[h.agent]}:6443`);
    }
  }

  async refreshAll(): Promise<void> {
    for (const r of this.replicas) await r?.refresh();
    this.syncModel();
    await this.settleReconnects();
  }

  async sweepAll(): Promise<void> {
    for (const r of this.replicas) await r?.sweep();
    this.syncModel();
    await this.settleReconnects();
  }
}

type Cmd = fc.AsyncCommand<object, World>;
const cmd = (name: string, run: (w: World) => Promise<void>): Cmd => ({
  check: () => true,
  run: async (_m, w) => {
    await run(w);
    w.syncModel();
    await w.settleReconnects();
    w.checkInvariants();
  },
  toString: () => name,
});

const anyStream = (w: World, pick: number): Stream | undefined => {
  const all = [...w.streams.values()];
  return all.length ? all[pick % all.length] : undefined;
};

const commands = [
  fc
    .tuple(fc.constantFrom<AgentId>('a1', 'a2', 'a1', 'a2', 'x'), fc.nat(2))
    .map(([a, r]) => cmd(`connect(${a}, r${r})`, (w) => w.connect(a, r))),
  fc
    .nat()
    .map((i) => cmd(`disconnect(#${i})`, async (w) => void (anyStream(w, i) && w.close(anyStream(w, i)!.id, false)))),
  fc.nat().map((i) =>
    cmd(`write(#${i})`, async (w) => {
      const s = anyStream(w, i);
      if (s) await w.write(s);
    }),
  ),
  fc.nat().map((i) =>
    cmd(`drop(#${i})`, async (w) => {
      const s = anyStream(w, i);
      if (!s) return;
      await w.replicas[s.replica]?.remove(s.id, 'dev');
      s.verdict = 'none';
    }),
  ),
  fc.tuple(fc.nat(), fc.boolean()).map(([i, failed]) =>
    cmd(`report(#${i}, ${failed ? 'FAILED' : 'ACTIVE'})`, async (w) => {
      const s = anyStream(w, i);
      if (!s) return;
      w.replicas[s.replica]?.report(s.id, 'dev', {
        state: failed ? 'FAILED' : 'ACTIVE',
        error: failed ? 'cannot reach the cluster' : '',
        forbiddenKinds: [],
        kinds: [],
      });
      await Promise.resolve();
    }),
  ),
  fc.integer({ min: 1, max: 2 * LEASE_MS }).map((ms) =>
    cmd(`advance(${ms})`, async (w) => {
      w.now += ms;
    }),
  ),
  fc.nat(2).map((r) => cmd(`refresh(r${r})`, async (w) => void (await w.replicas[r]?.refresh()))),
  fc.nat(2).map((r) => cmd(`sweep(r${r})`, async (w) => void (await w.replicas[r]?.sweep()))),
  fc.nat(2).map((r) =>
    cmd(`kill(r${r})`, async (w) => {
      await w.kill(r);
    }),
  ),
];

describe('the ownership protocol against its reference model', () => {
  it('agrees on every claim and keeps the invariants over random interleavings', async () => {
    await fc.assert(
      fc.asyncProperty(fc.commands(commands, { maxCommands: 60 }), async (cmds) => {
        const w = new World();
        for (const slot of [0, 1, 2]) await w.addReplica(slot);
        await fc.asyncModelRun(() => ({ model: {}, real: w }), cmds);
        // Quiescence: time passes with every replica renewing each third of a lease, as the server does, until a dead
        // replica's lease has expired; then an eligible connected agent must hold the account.
        for (let i = 0; i < 6; i++) {
          w.now += LEASE_MS / 3;
          await w.refreshAll();
        }
        w.checkInvariants();
        // By now every replica has renewed: none still counts a superseded stream as holding.
        for (const s of w.streams.values())
          if (w.superseded(s)) expect(w.replicas[s.replica]?.holds(s.id, 'dev'), `superseded ${s.id}`).toBe(false);
        const eligible = [...w.streams.values()].filter((s) => s.verdict === 'holder' || s.verdict === 'standby');
        if (eligible.length > 0)
          expect(w.holders().length, 'held while an eligible agent is connected').toBeGreaterThan(0);
        // The grace period passes with replicas renewing and sweeping: a record whose cluster has no agent left is
        // removed, and a stream refused for it then offers the name again and holds it (or stands by).
        for (let t = 0; t < GRACE_MS + 2 * LEASE_MS; t += LEASE_MS / 3) {
          w.now += LEASE_MS / 3;
          await w.refreshAll();
          await w.sweepAll();
        }
        w.checkInvariants();
        if ([...w.streams.values()].some((s) => s.verdict !== 'none' && !w.superseded(s)))
          expect(w.holders().length, 'held while any agent offering it is connected').toBeGreaterThan(0);
      }),
      { numRuns: 1000 },
    );
  });
});
