import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { ANONYMOUS } from '../../../src/plugin-server/auth/identity.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { PluginServerMetrics } from '../../../src/plugin-server/metrics.js';
import {
  admit,
  claimResult,
  rejectionLabel,
  StreamRegistration,
  validAccountName,
} from '../../../src/plugin-server/registration.js';
import {
  decideClaim,
  outranks,
  preferredAgent,
  type AccountLease,
  type LeaseClaim,
} from '../../../src/plugin-server/ownership.js';
import type { GatedSession, GateVerdict, SessionGate } from '../../../src/plugin-server/session-gate.js';
import { account } from './helpers.js';

const ok = (): GateVerdict => ({ ok: true });

describe('which offered accounts a stream may hold (registration.ts)', () => {
  it('admit: listed twice, then the upstream clash, then the gate — which is not asked when an earlier check refuses', () => {
    let asked = 0;
    const gate = (): GateVerdict => {
      asked += 1;
      return { ok: false, code: 'unauthorized', reason: 'token may not register dev' };
    };
    expect(admit('dev', { listedTwice: true, upstreamClash: 'upstream has dev', gate })).toEqual({
      code: 'listed_twice',
      reason: 'account listed twice by this agent',
    });
    expect(admit('dev', { listedTwice: false, upstreamClash: 'upstream has dev', gate })).toEqual({
      code: 'upstream',
      reason: 'upstream has dev',
    });
    expect(asked).toBe(0);
    expect(admit('dev', { listedTwice: false, upstreamClash: undefined, gate })).toEqual({
      code: 'unauthorized',
      reason: 'token may not register dev',
    });
    expect(admit('dev', { listedTwice: false, upstreamClash: undefined, gate: ok })).toBeUndefined();
  });

  describe("decideClaim and claimResult: the store's decision for an offer, as the agent is told it", () => {
    const fp = 'ab'.repeat(32);
    const offer = { name: 'dev', agentId: 'agent-a', host: '10.0.0.1:6443', fingerprint: fp };
    const claim = (agentId = 'agent-a', host = offer.host): LeaseClaim => ({
      account: 'dev',
      replica: 'r1',
      replicaUrl: '',
      sessionId: 's-new',
      agentId,
      cluster: { host, fingerprint: fp },
      leaseMs: 1000,
      failedHandoverMs: 5000,
      shareLoad: false,
    });
    const record = { agentId: 'agent-a', apiServerHost: '10.0.0.1:6443', caFingerprint: fp };
    const lease = (over: Partial<AccountLease> = {}): AccountLease => ({
      account: 'dev',
      replica: 'r2',
      replicaUrl: '',
      sessionId: 's-old',
      agentId: 'agent-a',
      state: 'ACTIVE',
      generation: 4,
      expiresAt: 2000,
      releasedAt: 0,
      failedAt: 0,
      shareLoad: false,
      handoffTo: '',
      ...over,
    });
    const told = (c: LeaseClaim, current: Parameters<typeof decideClaim>[1], now = 1000) =>
      claimResult({ ...offer, agentId: c.agentId, host: c.cluster.host }, decideClaim(c, current, now), 'r1');
    const code = (r: ReturnType<typeof claimResult>) => (r.accepted ? 'accepted' : r.code);

    it('takes a new name, and a name its own agent held through an older stream (a reconnect), with the next generation', () => {
      expect(decideClaim(claim(), {}, 1000)).toMatchObject({
        granted: true,
        lease: { generation: 1, expiresAt: 2000 },
      });
      expect(decideClaim(claim(), { record, lease: lease() }, 1000)).toMatchObject({
        granted: true,
        lease: { generation: 5, sessionId: 's-new', replica: 'r1' },
      });
    });

    it('refuses a name that is not a Kubernetes-style account name', () => {
      expect(validAccountName({ ...offer, name: '-dev' })?.accepted).toBe(false);
      expect(validAccountName({ ...offer, name: 'x'.repeat(254) })?.accepted).toBe(false);
      expect(validAccountName(offer)).toBeUndefined();
    });

    it('refuses another cluster under a held name, whoever holds it, naming both clusters', () => {
      expect(told(claim('agent-a', '10.9.9.9:6443'), { record, lease: lease({ releasedAt: 10 }) })).toEqual({
        accepted: false,
        code: 'cluster_conflict',
        reason:
          'account name dev is already registered by agent agent-a for cluster 10.0.0.1:6443 (CA abababababababab…); ' +
          'this agent offers cluster 10.9.9.9:6443 (CA abababababababab…)',
      });
    });

    it("makes another agent of the group a standby while the holder's lease is live, naming a peer replica", () => {
      const r = told(claim('agent-b'), { record, lease: lease() });
      expect(r.accepted ? '' : r.reason).toBe(
        'standby: account dev is held by agent agent-a on replica r2; this agent takes over when it leaves',
      );
      expect(code(told(claim('agent-b'), { record, lease: lease({ state: 'FAILED', failedAt: 900 }) }))).toBe(
        'standby',
      );
    });

    it('lets another agent take an account whose holder is lost: released, expired, or FAILED past the bound', () => {
      expect(code(told(claim('agent-b'), { record, lease: lease({ releasedAt: 900 }) }))).toBe('accepted');
      expect(code(told(claim('agent-b'), { record, lease: lease({ expiresAt: 1000 }) }))).toBe('accepted');
      const failed = lease({ state: 'FAILED', failedAt: 100, expiresAt: 9000 });
      expect(code(told(claim('agent-b'), { record, lease: failed }, 5099))).toBe('standby');
      expect(code(told(claim('agent-b'), { record, lease: failed }, 5100))).toBe('accepted');
    });

    describe('between agents that share load', () => {
      // Which of the two ranks first is the hash's to say: the rules are stated relative to it.
      const [hi, lo] = outranks('dev', 'agent-a', 'agent-b') ? ['agent-a', 'agent-b'] : ['agent-b', 'agent-a'];
      const sharing = (agentId: string): LeaseClaim => ({ ...claim(agentId), shareLoad: true });
      const held = (agentId: string, over: Partial<AccountLease> = {}) => lease({ agentId, shareLoad: true, ...over });

      it('ranks agents by rendezvous hashing: a strict order per account, the same for any order of candidates', () => {
        expect(outranks('dev', hi, lo)).toBe(true);
        expect(outranks('dev', lo, hi)).toBe(false);
        expect(outranks('dev', hi, hi)).toBe(false);
        const ids = ['a', 'b', 'c', 'd', 'e'];
        const first = preferredAgent('dev', ids);
        expect(preferredAgent('dev', [...ids].reverse())).toBe(first);
        for (const id of ids) if (id !== first) expect(outranks('dev', first!, id)).toBe(true);
        // Different accounts spread over the agents (not all to one).
        const chosen = new Set(Array.from({ length: 40 }, (_, i) => preferredAgent(`acct-${i}`, ids)));
        expect(chosen.size).toBeGreaterThan(1);
      });

      it('a standby that outranks the live holder asks for a handoff (same generation); a lower one does not', () => {
        const out = decideClaim(sharing(hi), { record, lease: held(lo) }, 1000);
        expect(out).toMatchObject({ granted: false, code: 'standby', handoff: { agentId: lo, handoffTo: hi } });
        expect(out.granted === false && out.code === 'standby' && out.handoff?.generation).toBe(4);
        expect(decideClaim(sharing(lo), { record, lease: held(hi) }, 1000)).toMatchObject({ handoff: undefined });
        // Not when either side does not share load.
        expect(decideClaim(claim(hi), { record, lease: held(lo) }, 1000)).toMatchObject({ handoff: undefined });
        expect(decideClaim(sharing(hi), { record, lease: lease({ agentId: lo }) }, 1000)).toMatchObject({
          handoff: undefined,
        });
        // Asked already: nothing to write.
        expect(decideClaim(sharing(hi), { record, lease: held(lo, { handoffTo: hi }) }, 1000)).toMatchObject({
          handoff: undefined,
        });
      });

      it('keeps a handed-over lease for the agent it was handed to for one lease period, then for anyone', () => {
        const released = held(lo, { handoffTo: hi, releasedAt: 900 });
        // leaseMs is 1000: reserved until 1900.
        expect(code(told(sharing(lo), { record, lease: released }, 1000))).toBe('standby');
        expect(code(told(sharing('agent-c'), { record, lease: released }, 1899))).toBe('standby');
        expect(decideClaim(sharing(hi), { record, lease: released }, 1000)).toMatchObject({
          granted: true,
          lease: { agentId: hi, generation: 5, handoffTo: '', shareLoad: true },
        });
        expect(code(told(sharing(lo), { record, lease: released }, 1900))).toBe('accepted');
      });

      it("a reconnect of the holder keeps the handoff asked of it; another agent's grant clears it", () => {
        const asked = held(lo, { handoffTo: hi });
        expect(decideClaim(sharing(lo), { record, lease: asked }, 1000)).toMatchObject({
          granted: true,
          lease: { agentId: lo, handoffTo: hi },
        });
        expect(
          decideClaim(sharing('agent-c'), { record, lease: held('agent-c', { expiresAt: 500 }) }, 1000),
        ).toMatchObject({ granted: true, lease: { handoffTo: '' } });
      });
    });
  });

  it('counts refusals under the metric labels operators already query; standbys and duplicates are not errors', () => {
    expect(rejectionLabel('cluster_conflict')).toBe('conflict');
    expect(rejectionLabel('unauthorized')).toBe('unauthorized');
    expect(rejectionLabel('dynamic')).toBe('dynamic');
    expect(rejectionLabel('upstream')).toBe('upstream');
    expect(rejectionLabel('invalid_name')).toBe('invalid_name');
    expect(rejectionLabel('standby')).toBeUndefined();
    expect(rejectionLabel('listed_twice')).toBeUndefined();
  });

  /** Real registry over a real memory store; the gate (auth/dynamic accounts) answers from a table. */
  function setup(refuse: Record<string, GateVerdict> = {}) {
    const store = new MemoryCacheStore();
    const log = pino({ level: 'silent' });
    const accounts = new AccountRegistry(store, log, { gracePeriodMs: 1000 });
    const metrics = new PluginServerMetrics({ store, accounts });
    const told: string[] = [];
    const gate: SessionGate = {
      identify: () => ANONYMOUS,
      check: (_, name) => refuse[name] ?? { ok: true },
      rejected: (_, name) => void told.push(name),
      welcomed: () => undefined,
      status: () => undefined,
      closed: () => undefined,
    };
    const session = (id: string, agentId: string): GatedSession => ({
      id,
      agentId,
      zone: '',
      identity: ANONYMOUS,
      open: true,
      sendAccountsChanged: () => undefined,
    });
    const registration = (id: string, agentId: string, upstream?: string) =>
      new StreamRegistration(
        {
          accounts,
          store,
          metrics,
          log,
          gate,
          upstreamClash: (name) => (name === upstream ? `the upstream Clouddriver has an account ${name}` : undefined),
        },
        { ...session(id, agentId), shareLoad: false },
      );
    return { store, accounts, metrics, told, registration };
  }

  it('accepts, refuses with a code each, and remembers the standby', async () => {
    const t = setup({ secret: { ok: false, code: 'unauthorized', reason: 'not yours' } });
    await t.store.apply([
      { op: 'syncStart', scope: { account: 'dev', group: '', kind: 'ConfigMap', namespace: '' }, version: 'v1' },
      {
        op: 'syncEnd',
        scope: { account: 'dev', group: '', kind: 'ConfigMap', namespace: '' },
        version: 'v1',
        resourceVersion: '42',
      },
    ]);
    const first = t.registration('s1', 'agent-a', 'legacy');
    const offered = await first.offer([
      account('dev'),
      account('dev'),
      account('legacy'),
      account('secret'),
      account('bad name'),
    ]);
    expect(offered.accepted).toEqual(['dev']);
    expect(offered.resumePoints).toEqual([
      {
        account: 'dev',
        kind: { group: '', version: 'v1', kind: 'ConfigMap', resource: '', namespaced: false },
        namespace: '',
        resourceVersion: '42',
      },
    ]);
    expect(offered.rejected.map((r) => r.name)).toEqual(['dev', 'legacy', 'secret', 'bad name']);
    expect(first.refusals().map((r) => [r.name, r.code])).toEqual([
      ['legacy', 'upstream'],
      ['secret', 'unauthorized'],
      ['bad name', 'invalid_name'],
    ]);
    expect(t.told).toEqual(['legacy', 'secret', 'bad name']);

    // Another cluster under the same name; another agent of the group for the same cluster.
    const other = t.registration('s2', 'agent-b');
    await other.offer([account('dev', '10.9.9.9:6443')]);
    expect(other.refusals().map((r) => r.code)).toEqual(['cluster_conflict']);
    const standby = t.registration('s3', 'agent-b');
    await standby.offer([account('dev')]);
    expect(standby.refusals().map((r) => r.code)).toEqual(['standby']);
    expect([...standby.standbyFor]).toEqual(['dev']);
    expect(t.accounts.holds('s1', 'dev')).toBe(true);

    const counted = (await t.metrics.accountRejections.get()).values.map((v) => [v.labels.reason, v.value]);
    expect(counted.sort()).toEqual([
      ['conflict', 1],
      ['invalid_name', 1],
      ['unauthorized', 1],
      ['upstream', 1],
    ]);
  });
});

describe('a release the store did not take', () => {
  it('is written again before the next renewal, which would otherwise keep a lease nobody holds alive', async () => {
    let now = 1_000_000;
    const store = new MemoryCacheStore(() => now);
    const release = store.releaseAccounts.bind(store);
    let failures = 1;
    store.releaseAccounts = async (...args) => {
      if (failures-- > 0) throw new Error('connection lost');
      return release(...args);
    };
    const registry = new AccountRegistry(store, pino({ level: 'silent' }), {
      gracePeriodMs: 5_000,
      leaseMs: 3_000,
      now: () => now,
      monotonicNow: () => now,
      replica: { id: 'r1', url: '' },
    });
    await registry.load();
    expect(await registry.register({ id: 's1', agentId: 'a1' }, account('dev', 'c1:6443'))).toEqual({ accepted: true });
    registry.release('s1');
    await registry.flush();
    now += 1_000;
    await registry.refresh();
    const lease = (await store.listLeases()).leases.find((l) => l.account === 'dev');
    expect(lease?.releasedAt).toBe(now);
    // Released, the account is swept after the grace period instead of being held by nobody for good.
    now += 6_000;
    await registry.refresh();
    expect(await registry.sweep()).toEqual(['dev']);
  });
});
