/**
 * Issue 25, case 6: a silent partition. The MySQL link of the replica holding an account is blackholed (Toxiproxy's
 * timeout toxic: every byte dropped, no connection closed) for twice the lease. The holder's side of its lease ends
 * first (docs/architecture.md#account-ownership, HOLDER_LEASE_FRACTION): it closes the agent's stream before its
 * peer can see the lease expire, so no poll ever finds the peer treating the lease as gone while the cut replica
 * still holds the agent's stream. The agent reconnects through HAProxy to the peer, which serves the account; the
 * account is never ORPHANED there for longer than the checker of the randomized schedules allows while its agent is
 * connected, and the cache checker's diff is 0 through both replicas once the link is back.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import { OwnershipJudge, type ReplicaSeen, type World } from '../infra/schedules/ownership-judge.js';
import { agentOnLinkedReplica } from '../infra/linked-replica.js';
import type { AccountView, AgentView } from '../infra/replica-rest.js';
import { startReplicas, type Stack } from '../infra/stack.js';
import { apiServerHostPort } from '../infra/toxiproxy.js';

const LEASE_SECONDS = 6;
const NAME = 'cut-off';

/** The list a REST read answers (under `key` when given); undefined when the replica did not answer with one. */
async function listOf<T>(url: string, key?: string): Promise<T[] | undefined> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    if (!res.ok) return undefined;
    const body = (await res.json()) as unknown;
    const list = key ? (body as Record<string, unknown>)[key] : body;
    return Array.isArray(list) ? (list as T[]) : undefined;
  } catch {
    return undefined;
  }
}

describe('a holder replica whose MySQL link drops every packet', () => {
  let stack: Stack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('closes its streams before its peer sees the lease expire; the peer serves the agent', async () => {
    stack = await startReplicas('partition', { gracePeriodSeconds: 60, leaseSeconds: LEASE_SECONDS }, { replicas: 1 });
    const { ns, server: peer } = stack;
    // The peer down for a moment, so the agent's stream lands on the replica whose link will be cut.
    const { toxi, linked: cut } = await agentOnLinkedReplica(stack, {
      replica: 'replica-cut',
      account: NAME,
      agent: { agentId: 'cut-agent', accounts: [{ name: NAME, kinds: ['ConfigMap'] }] },
    });
    await kubectl(['create', 'configmap', 'before', '-n', ns, '--from-literal=k=v']);
    await waitForCacheToMatch(stack.cacheCheck(NAME, { httpBase: peer.httpBase }));

    // Watch both replicas: the peer first, then the cut replica, so a stream the cut replica still holds after the
    // peer has seen the lease end is one it held past the lease (the peer's view only ever lags the store's).
    const overlaps: string[] = [];
    const judge = new OwnershipJudge(LEASE_SECONDS * 1000, 60_000);
    const world: World = {
      groups: [{ account: NAME, agents: ['cut-agent'], kubeHost: apiServerHostPort() }],
      dynamic: new Map(),
      allAgents: ['cut-agent'],
    };
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const [accounts, peerAgents] = await Promise.all([
          listOf<AccountView>(`${peer.httpBase}/armory/accounts`, 'items'),
          listOf<AgentView>(`${peer.httpBase}/armory/agents`),
        ]);
        // Only the agents' list on the cut replica: it answers from memory, while reads of accounts wait on MySQL.
        const cutAgents = await listOf<AgentView>(`${cut.httpBase}/armory/agents`);
        const onPeer = accounts?.find((x) => x.name === NAME);
        const cutStream = cutAgents?.find((x) => x.heldBy === 'local' && x.accounts.includes(NAME));
        if (onPeer && onPeer.heldBy === null && cutStream) {
          overlaps.push(`${new Date().toISOString()}: peer shows ${NAME} ${onPeer.state}, the cut replica holds it`);
        }
        const seen: ReplicaSeen = {
          replica: 'peer',
          disturbed: false,
          accounts,
          sessions: peerAgents?.filter((x) => x.heldBy === 'local'),
        };
        // The cut replica's streams count as connected agents (its answers are not judged: it is cut off).
        const cutSeen: ReplicaSeen = {
          replica: 'cut',
          disturbed: true,
          sessions: cutAgents?.filter((x) => x.heldBy === 'local'),
        };
        judge.observe(Date.now(), world, [seen, cutSeen]);
        await sleep(100);
      }
    })();

    // Every byte dropped both ways, no connection closed, for twice the lease.
    for (const stream of ['upstream', 'downstream'] as const) {
      await toxi.addToxic('mysql', `blackhole-${stream}`, stream, { type: 'timeout', attributes: { timeout: 0 } });
    }
    const cutAt = Date.now();
    await kubectl(['create', 'configmap', 'during', '-n', ns, '--from-literal=k=v']);
    await waitFor(
      'the peer to hold the account for the agent',
      async () => {
        const v = (await peer.get<AccountView>(`/armory/accounts/${NAME}`)).body;
        return v.heldBy === 'local' && v.agentId === 'cut-agent' && v.state === 'ACTIVE' ? true : undefined;
      },
      60_000,
    );
    await sleep(Math.max(0, cutAt + 2 * LEASE_SECONDS * 1000 - Date.now()));
    for (const stream of ['upstream', 'downstream'] as const) await toxi.removeToxic('mysql', `blackhole-${stream}`);
    await waitFor('the cut replica ready again', async () => (await fetch(`${cut.httpBase}/readyz`)).ok, 60_000);

    await kubectl(['create', 'configmap', 'after', '-n', ns, '--from-literal=k=v']);
    for (const r of [peer, cut]) await waitForCacheToMatch(stack.cacheCheck(NAME, { httpBase: r.httpBase }));
    watching = false;
    await watch;
    expect(overlaps).toEqual([]);
    expect(judge.violations).toEqual([]);
    // The watch really saw the hand-over: the account held through the peer at the end.
    expect(judge.rounds).toBeGreaterThan(10);
    expect((await peer.get<AccountView>(`/armory/accounts/${NAME}`)).body).toMatchObject({ heldBy: 'local' });
  }, 300_000);
});
