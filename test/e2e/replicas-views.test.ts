/**
 * Three plugin-server replicas on one MariaDB behind HAProxy, three agents through it: the admin API answers for
 * every replica's agents and accounts on every replica (replica-views.ts). /armory/agents, /armory/agents/{id} and
 * /armory/accounts/{name}, with what the agent reported (kinds, forbidden kinds), read the same on each; after the
 * replica holding an agent is SIGKILLed, the survivor the agent reconnects to lists it as its own and no replica
 * lists anything held by the dead one.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { createServiceAccount, kubectl, waitFor } from '../infra/index.js';
import type { PluginServerProcess } from '../infra/processes.js';
import { replicasStack, useStack } from '../infra/stack.js';

type HeldBy = 'local' | { replica: string; url: string } | null;

interface AgentView {
  agentId: string;
  accounts: string[];
  sessionId: string;
  connectedAt: string;
  heldBy: HeldBy;
}

interface AccountDetail {
  name: string;
  state: string;
  heldBy: HeldBy;
  forbiddenKinds: string[];
  kinds: { kind: string }[];
}

const AGENTS = ['view-agent-0', 'view-agent-1', 'view-agent-2'];
const ACCOUNTS = ['view-0', 'view-1', 'view-2'];

/**
 * The body as JSON without what is per replica by design: heldBy ('local' here, the peer elsewhere), lastUpdated
 * (when this replica learnt of the account), and the stream's liveness fields (lastConnection, ackedSeq), which a
 * peer sees as of the holder's last heartbeat.
 */
function comparable(body: unknown): string {
  const perReplica = new Set(['heldBy', 'lastUpdated', 'lastConnection', 'ackedSeq']);
  return JSON.stringify(body, (k, v: unknown) => (perReplica.has(k) ? undefined : v));
}

describe('every replica answers for every agent and account', () => {
  const stack = useStack(
    replicasStack('views', { gracePeriodSeconds: 60, leaseSeconds: 3 }, { replicas: 3, loadBalancer: true }),
  );

  /** The body of `path` once it reads the same on each replica (they converge within a heartbeat). */
  const identical = async <T>(path: string, on: PluginServerProcess[] = stack.replicas): Promise<T[]> =>
    waitFor(`${path} identical on every replica`, async () => {
      const bodies = await Promise.all(on.map(async (r) => (await r.get<T>(path)).body));
      const texts = bodies.map(comparable);
      return texts.every((t) => t === texts[0]) ? bodies : undefined;
    });

  beforeAll(async () => {
    await kubectl(['create', 'configmap', 'cm', '-n', stack.ns, '--from-literal=k=v']);
    // view-0's agent may read ConfigMaps only: it reports Secret as forbidden, which every replica must show.
    const sa = await createServiceAccount({
      namespace: stack.ns,
      name: 'cm-reader',
      rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list', 'watch'] }],
    });
    for (const [i, name] of ACCOUNTS.entries()) {
      const account =
        i === 0
          ? { name, kubeconfigFile: sa.kubeconfigPath, kinds: ['ConfigMap', 'Secret'] }
          : { name, kinds: ['ConfigMap'] };
      await stack.addAgent({ agentId: AGENTS[i], accounts: [account] });
    }
    for (const account of ACCOUNTS) await waitForCacheToMatch(stack.cacheCheck(account));
  });

  it('/armory/agents, /armory/agents/{id} and /armory/accounts/{name} read the same on every replica', async () => {
    const lists = await waitFor('every agent listed on every replica', async () => {
      const all = await identical<AgentView[]>('/armory/agents');
      return all[0]?.length === AGENTS.length ? all : undefined;
    });
    expect(lists[0]?.map((a) => [a.agentId, a.accounts])).toEqual(AGENTS.map((id, i) => [id, [ACCOUNTS[i]]]));
    // Each agent is the local one of exactly one replica, and the others name that replica as its holder.
    for (const agentId of AGENTS) {
      const held = lists.map((l) => l.find((a) => a.agentId === agentId)?.heldBy);
      expect(held.filter((h) => h === 'local')).toHaveLength(1);
      const peers = held.filter((h) => h !== 'local');
      expect(peers).toHaveLength(2);
      const named = peers.map((h) => (typeof h === 'object' && h ? h.replica : ''));
      expect(named[0]).not.toBe('');
      expect(named[1]).toBe(named[0]);
      const one = await identical<AgentView>(`/armory/agents/${agentId}`);
      expect(one[0]?.sessionId).toBe(lists[0]?.find((a) => a.agentId === agentId)?.sessionId);
    }

    const listed = await identical<{ items: AccountDetail[] }>('/armory/accounts');
    expect(listed[0]?.items.map((a) => a.name)).toEqual(ACCOUNTS);
    for (const name of ACCOUNTS) {
      const views = await identical<AccountDetail>(`/armory/accounts/${name}`);
      expect(views[0]?.state).toBe('ACTIVE');
      expect(views.filter((v) => v.heldBy === 'local')).toHaveLength(1);
    }
    // What view-0's agent reported (the kinds it watches, Secret forbidden) shows on the replicas it does not
    // stream to as on its own.
    const detail = await waitFor('view-0 reported on every replica', async () => {
      const all = await identical<AccountDetail>('/agents/kubernetes/accounts/view-0');
      return all.every((d) => d.forbiddenKinds.length > 0) ? all : undefined;
    });
    for (const d of detail) {
      expect(d.forbiddenKinds.join(',')).toMatch(/Secret/);
      expect(d.kinds.map((k) => k.kind)).toContain('ConfigMap');
    }
  });

  it("after SIGKILL of an agent's replica, the survivor it reconnects to lists it and the dead one's entries go", async () => {
    const holderOf = async (agentId: string) => {
      for (const r of stack.replicas) {
        const a = (await r.get<AgentView[]>('/armory/agents')).body.find((x) => x.agentId === agentId);
        if (a?.heldBy === 'local') return r;
      }
      return undefined;
    };
    const victim = await waitFor('the replica view-agent-0 streams to', () => holderOf('view-agent-0'));
    const survivors = stack.replicas.filter((r) => r !== victim);
    const seenFromPeer = (await survivors[0]!.get<AgentView[]>('/armory/agents')).body.find(
      (a) => a.agentId === 'view-agent-0',
    )?.heldBy;
    const victimId = seenFromPeer && seenFromPeer !== 'local' ? seenFromPeer.replica : '';
    expect(victimId).not.toBe('');
    const before = (await victim.get<AgentView>('/armory/agents/view-agent-0')).body.sessionId;

    await victim.kill();

    const lists = await waitFor('view-agent-0 listed by its new replica, nothing by the dead one', async () => {
      const all = await Promise.all(survivors.map(async (r) => (await r.get<AgentView[]>('/armory/agents')).body));
      const onDead = all.flat().filter((a) => a.heldBy !== 'local' && a.heldBy?.replica === victimId);
      const moved = all.map((l) => l.find((a) => a.agentId === 'view-agent-0'));
      const local = moved.filter((a) => a?.heldBy === 'local');
      return onDead.length === 0 && local.length === 1 && all.every((l) => l.length === AGENTS.length)
        ? all
        : undefined;
    });
    // One survivor holds it through a new stream; the other names that survivor.
    const entries = lists.map((l) => l.find((a) => a.agentId === 'view-agent-0')!);
    expect(entries.map((e) => e.sessionId)).toEqual([entries[0]!.sessionId, entries[0]!.sessionId]);
    expect(entries[0]!.sessionId).not.toBe(before);
    const other = entries.find((e) => e.heldBy !== 'local')!.heldBy;
    expect(other).not.toBe('local');
    expect(other && other !== 'local' ? other.replica : victimId).not.toBe(victimId);

    // The survivors agree on every agent and on the moved account, reported status included.
    await identical<AgentView[]>('/armory/agents', survivors);
    const one = await identical<AgentView>('/armory/agents/view-agent-0', survivors);
    expect(one.map((a) => a.sessionId)).toEqual([entries[0]!.sessionId, entries[0]!.sessionId]);
    const account = await waitFor('view-0 held again, reported on both survivors', async () => {
      const all = await identical<AccountDetail>('/agents/kubernetes/accounts/view-0', survivors);
      return all.every((d) => d.state === 'ACTIVE' && d.forbiddenKinds.length > 0) ? all : undefined;
    });
    expect(account.filter((d) => d.heldBy === 'local')).toHaveLength(1);
    for (const d of account) expect(d.heldBy === 'local' || d.heldBy?.replica !== victimId).toBe(true);
  });
});
