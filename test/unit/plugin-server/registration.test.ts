import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { ANONYMOUS } from '../../../src/plugin-server/auth/identity.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { PluginServerMetrics } from '../../../src/plugin-server/metrics.js';
import { admit, decideHolder, rejectionLabel, StreamRegistration } from '../../../src/plugin-server/registration.js';
import { normalizeAccountRecord } from '../../../src/plugin-server/cache/store.js';
import type { RegisteredAccount } from '../../../src/plugin-server/accounts.js';
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

  describe("decideHolder: the registry's decision for an offer", () => {
    const fp = 'ab'.repeat(32);
    const offer = { name: 'dev', agentId: 'agent-a', host: '10.0.0.1:6443', fingerprint: fp };
    const held = (over: Partial<RegisteredAccount> = {}): RegisteredAccount => ({
      record: normalizeAccountRecord({
        name: 'dev',
        agentId: 'agent-a',
        apiServerHost: '10.0.0.1:6443',
        caFingerprint: fp,
      }),
      state: 'ACTIVE',
      sessionId: 's-old',
      lastUpdated: 0,
      ...over,
    });
    const code = (r: ReturnType<typeof decideHolder>) => (r.accepted ? 'accepted' : r.code);

    it('takes a new name, and a name its own agent held through an older stream (a reconnect)', () => {
      expect(decideHolder(offer, undefined)).toEqual({ accepted: true });
      expect(decideHolder(offer, held())).toEqual({ accepted: true });
    });

    it('refuses a name that is not a Kubernetes-style account name', () => {
      expect(code(decideHolder({ ...offer, name: '-dev' }, undefined))).toBe('invalid_name');
      expect(code(decideHolder({ ...offer, name: 'x'.repeat(254) }, undefined))).toBe('invalid_name');
    });

    it('refuses another cluster under a held name, whoever holds it, naming both clusters', () => {
      const r = decideHolder({ ...offer, host: '10.9.9.9:6443' }, held({ state: 'ORPHANED', sessionId: undefined }));
      expect(r).toEqual({
        accepted: false,
        code: 'cluster_conflict',
        reason:
          'account name dev is already registered by agent agent-a for cluster 10.0.0.1:6443 (CA abababababababab…); ' +
          'this agent offers cluster 10.9.9.9:6443 (CA abababababababab…)',
      });
      expect(code(decideHolder({ ...offer, fingerprint: 'cd'.repeat(32) }, held()))).toBe('cluster_conflict');
    });

    it('makes another agent of the group a standby while the holder streams, here or on a peer', () => {
      expect(code(decideHolder({ ...offer, agentId: 'agent-b' }, held()))).toBe('standby');
      const onPeer = held({ sessionId: undefined, peer: { replica: 'r2', url: '', agentId: 'agent-a' } });
      const r = decideHolder({ ...offer, agentId: 'agent-b' }, onPeer);
      expect(r.accepted ? '' : r.reason).toBe(
        'standby: account dev is held by agent agent-a on replica r2; this agent takes over when it leaves',
      );
    });

    it('lets another agent of the group take an ORPHANED account, or one no stream holds', () => {
      expect(decideHolder({ ...offer, agentId: 'agent-b' }, held({ state: 'ORPHANED', sessionId: undefined }))).toEqual(
        {
          accepted: true,
        },
      );
      expect(decideHolder({ ...offer, agentId: 'agent-b' }, held({ sessionId: undefined }))).toEqual({
        accepted: true,
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
        session(id, agentId),
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
