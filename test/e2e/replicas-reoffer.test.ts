/**
 * Issue 25, an account name another cluster took first (the randomized schedules' seed 3): two plugin-server replicas
 * on one MariaDB; an agent of another cluster (the shared API server through a Toxiproxy address, which the protocol
 * cannot tell from another cluster) registers the name through replica A, and the name's own agent, connected to
 * replica B, is refused (`cluster_conflict`). Once the other cluster's record is gone — removed after its agent left
 * and the grace period passed, or dropped by its agent — the refused agent takes the name on its running stream
 * (its other account keeps its stream) and serves it: the cache checker's diff is 0. The record goes on A or on
 * whichever replica sweeps it; the refused agent is told by B.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import type { AgentProcess, PluginServerProcess } from '../infra/processes.js';
import { accountOn, agentOn } from '../infra/replica-rest.js';
import { replicasStack, useStack } from '../infra/stack.js';
import { apiServerHostPort, kubeconfigThrough, Toxiproxy } from '../infra/toxiproxy.js';

describe('a name another cluster registered first', () => {
  // A short grace period: the other cluster's record is removed soon after its agent leaves.
  const stack = useStack(replicasStack('reoffer', { gracePeriodSeconds: 3, leaseSeconds: 3 }));
  let a: PluginServerProcess;
  let b: PluginServerProcess;
  let otherCluster: string;

  beforeAll(async () => {
    [a, b] = stack.pair;
    const toxi = await Toxiproxy.start(stack.dir);
    stack.defer(() => toxi.stop());
    otherCluster = kubeconfigThrough(
      await toxi.createProxy('other-cluster', apiServerHostPort()),
      join(stack.dir, 'other-cluster-kubeconfig'),
    );
  });

  /** The other cluster's agent holds `name` through A, then `owner` (also serving `bystander`) is refused on B. */
  async function takenFirst(name: string, owner: string): Promise<{ other: AgentProcess; sessionId: string }> {
    const other = await stack.addAgent({
      agentId: `${name}-other`,
      serverAddress: a.grpcAddress,
      accounts: [{ name, kubeconfigFile: otherCluster, kinds: ['ConfigMap'] }],
    });
    await waitFor(`B to see the other cluster holding ${name}`, async () =>
      (await accountOn(b, name)).agentId === `${name}-other` ? true : undefined,
    );
    await stack.addAgent({
      agentId: owner,
      serverAddress: b.grpcAddress,
      accounts: [
        { name, kinds: ['ConfigMap'] },
        { name: `${name}-bystander`, kinds: ['ConfigMap'] },
      ],
    });
    const refused = await waitFor(`${owner} refused on B`, () => agentOn(b, owner));
    expect(refused.rejectedAccounts).toEqual([
      { name, reason: expect.stringMatching(new RegExp(`already registered by agent ${name}-other`)) },
    ]);
    expect(refused.accounts).toEqual([`${name}-bystander`]);
    return { other, sessionId: refused.sessionId };
  }

  /** `owner` holds `name` on B for the shared cluster, on the stream it had, and its cache is the cluster's. */
  async function takenBack(name: string, owner: string, sessionId: string): Promise<void> {
    const held = await waitFor(
      `${owner} to take ${name} back`,
      async () => {
        const v = await accountOn(b, name);
        return v.agentId === owner && v.heldBy === 'local' && v.state === 'ACTIVE' ? v : undefined;
      },
      60_000,
    );
    expect(held.kubeHost).toBe(apiServerHostPort());
    // Offered again on the running stream: the agent's other account was not disturbed by a new stream.
    expect(await agentOn(b, owner)).toMatchObject({ sessionId, rejectedAccounts: [] });
    await kubectl(['create', 'configmap', `${name}-after`, '-n', stack.ns, '--from-literal=k=v']);
    for (const r of [a, b]) await waitForCacheToMatch(stack.cacheCheck(name, { httpBase: r.httpBase }));
  }

  it('the other cluster leaves: after the grace period the refused agent takes the name', async () => {
    const { other, sessionId } = await takenFirst('left', 'left-owner');
    await other.stop();
    await takenBack('left', 'left-owner', sessionId);
  });

  it('the other cluster drops the name through A: the agent refused on B takes it', async () => {
    const { other, sessionId } = await takenFirst('dropped', 'dropped-owner');
    other.writeAccounts([]);
    await takenBack('dropped', 'dropped-owner', sessionId);
  });
});
