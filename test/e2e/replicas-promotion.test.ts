/**
 * Issue 25, case 2: a standby is promoted on any loss of the holder, not only when the holder's stream ends
 * (ORPHANED). Two plugin-server replicas on one MariaDB, two real agents of one group, the holder connected to A and
 * the standby to B: when the holder drops the account from its configuration (REMOVED: the account moved, make before
 * break, to the other agent) and when the holder reports the account FAILED (its credentials refused) for
 * FAILED_HANDOVER_LEASES leases, the standby on B holds it and serves it (cache checker's diff 0). The grace period is
 * longer than the test, so nothing but the promotion can hand the account over.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, testEnv, waitFor } from '../infra/index.js';
import type { PluginServerProcess } from '../infra/processes.js';
import { accountOn, agentOn } from '../infra/replica-rest.js';
import { replicasStack, useStack } from '../infra/stack.js';

describe('a standby promoted when its holder drops the account or reports it FAILED', () => {
  // FAILED is handed over after 3 leases (30 s): time enough for the standby to register first, however loaded the
  // machine. The grace period outlasts the test: an account is never swept and claimed afresh here.
  const stack = useStack(replicasStack('promotion', { gracePeriodSeconds: 600, leaseSeconds: 10 }));
  let a: PluginServerProcess;
  let b: PluginServerProcess;
  beforeAll(() => {
    [a, b] = stack.pair;
  });

  async function standbyOnB(name: string, agentId: string, holder: string): Promise<void> {
    await stack.addAgent({ agentId, serverAddress: b.grpcAddress, accounts: [{ name, kinds: ['ConfigMap'] }] });
    const onB = await waitFor(`${agentId} on B`, () => agentOn(b, agentId));
    expect(onB.rejectedAccounts).toEqual([
      { name, reason: expect.stringMatching(new RegExp(`^standby: .*${holder}`)) },
    ]);
  }

  async function promotedOnB(name: string, agentId: string): Promise<void> {
    await waitFor(
      `${agentId} to hold ${name} on B`,
      async () => {
        const v = await accountOn(b, name);
        return v.agentId === agentId && v.heldBy === 'local' && v.state === 'ACTIVE' ? true : undefined;
      },
      90_000,
    );
    await kubectl(['create', 'configmap', `${name}-after`, '-n', stack.ns, '--from-literal=k=v']);
    for (const r of [a, b]) await waitForCacheToMatch(stack.cacheCheck(name, { httpBase: r.httpBase }));
  }

  it('REMOVED: the holder drops the account from its configuration', async () => {
    const holder = await stack.addAgent({
      agentId: 'moved-1',
      serverAddress: a.grpcAddress,
      accounts: [{ name: 'moved', kinds: ['ConfigMap'] }],
    });
    expect(await accountOn(a, 'moved')).toMatchObject({ agentId: 'moved-1', heldBy: 'local' });
    await standbyOnB('moved', 'moved-2', 'moved-1');
    holder.writeAccounts([]);
    await promotedOnB('moved', 'moved-2');
  });

  it('FAILED past the bound: the holder cannot reach the cluster with its credentials', async () => {
    // The cluster's own address and CA (the same cluster as the standby's), with a token the API server refuses.
    const revoked = join(stack.dir, 'revoked-kubeconfig');
    writeFileSync(revoked, readFileSync(testEnv().kubeconfig, 'utf8').replace(/^( *token:).*$/m, '$1 revoked'));
    await stack.addAgent({
      agentId: 'failing-1',
      serverAddress: a.grpcAddress,
      accounts: [{ name: 'failing', kubeconfigFile: revoked, kinds: ['ConfigMap'] }],
      waitReady: false,
    });
    await waitFor('A to show failing-1 holding the account FAILED', async () => {
      const v = await accountOn(a, 'failing');
      return v.agentId === 'failing-1' && v.heldBy === 'local' && v.state === 'FAILED' ? true : undefined;
    });
    await standbyOnB('failing', 'failing-2', 'failing-1');
    await promotedOnB('failing', 'failing-2');
  });
});
