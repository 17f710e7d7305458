import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountActivity } from '../../../src/plugin-server/account-activity.js';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { ReplicaViews } from '../../../src/plugin-server/replica-views.js';
import type { SessionInfo } from '../../../src/plugin-server/sessions.js';
import { account } from './helpers.js';

const log = pino({ level: 'silent' });

function session(agentId: string, sessionId: string, connectedAt: number, accounts: string[]): SessionInfo {
  return {
    sessionId,
    agentId,
    version: '1.2.3',
    zone: 'z1',
    identity: {},
    peer: '127.0.0.1:1',
    authIdentity: 'anonymous',
    rejectedAccounts: [],
    connectedAt,
    lastMessageAt: connectedAt,
    accounts,
    ackedSeq: 0,
    pendingBytes: 0,
  };
}

/** Two replicas on one store, with one clock and their agent streams set by the test. */
function twoReplicas() {
  const clock = { now: 1_000_000 };
  const now = () => clock.now;
  const store = new MemoryCacheStore(now);
  const make = (id: string) => {
    const sessions: SessionInfo[] = [];
    const accounts = new AccountRegistry(store, log, {
      gracePeriodMs: 60_000,
      leaseMs: 3_000,
      replica: { id, url: `http://${id}:7002` },
      now,
    });
    const activity = new AccountActivity();
    const views = new ReplicaViews({ store, accounts, activity, sessions: () => sessions, log, monotonicNow: now });
    return { sessions, accounts, activity, views };
  };
  return { clock, a: make('replica-a'), b: make('replica-b') };
}

describe('ReplicaViews', () => {
  it("lists the peer's agents with their replica and its accounts' reported status once both have published", async () => {
    const { a, b } = twoReplicas();
    a.sessions.push(session('agent-1', 's1', 10, ['dev']));
    await a.accounts.register({ id: 's1', agentId: 'agent-1' }, account('dev'));
    a.accounts.report('s1', 'dev', { state: 'ACTIVE', error: '', forbiddenKinds: ['Secret'], kinds: [] });
    a.activity.applied('dev', 3, 999_900, 1_000_000);
    // B has not read A's view yet: it lists only its own streams (none).
    expect(b.views.agents()).toEqual([]);
    await a.views.heartbeat();
    await b.views.heartbeat();

    expect(b.views.agents()).toEqual([
      expect.objectContaining({
        agentId: 'agent-1',
        sessionId: 's1',
        accounts: ['dev'],
        heldBy: { replica: 'replica-a', url: 'http://replica-a:7002' },
      }),
    ]);
    expect(a.views.agents()).toEqual([expect.objectContaining({ agentId: 'agent-1', heldBy: 'local' })]);
    expect(b.views.account('replica-a', 'dev')).toMatchObject({
      reported: { forbiddenKinds: ['Secret'], state: 'ACTIVE' },
      activity: { changeLagMs: 100, lastChangeAt: 1_000_000 },
    });
    // Only what the replica's agents hold is published.
    expect(b.views.account('replica-b', 'dev')).toBeUndefined();
  });

  it("a killed replica's entries go when its view expires; a moved agent is listed only where it connected last", async () => {
    const { clock, a, b } = twoReplicas();
    a.sessions.push(session('agent-1', 's1', 10, ['dev']), session('agent-2', 's2', 10, ['prod']));
    await a.views.heartbeat();
    // agent-1 reconnects to B (A was killed and publishes no more).
    b.sessions.push(session('agent-1', 's3', 20, ['dev']));
    await b.views.heartbeat();
    expect(b.views.agents().map((x) => [x.agentId, x.sessionId])).toEqual([
      ['agent-1', 's3'],
      ['agent-2', 's2'],
    ]);
    // Past A's lease the rest of its entries go too, even before B's next heartbeat.
    clock.now += 3_000;
    expect(b.views.agents().map((x) => x.sessionId)).toEqual(['s3']);
    await b.views.heartbeat();
    expect(b.views.agents().map((x) => x.sessionId)).toEqual(['s3']);
  });

  it("a stopping replica's entries go at once", async () => {
    const { a, b } = twoReplicas();
    a.sessions.push(session('agent-1', 's1', 10, []));
    await a.views.heartbeat();
    await b.views.heartbeat();
    expect(b.views.agents()).toHaveLength(1);
    await a.views.withdraw();
    await b.views.heartbeat();
    expect(b.views.agents()).toEqual([]);
  });
});
