/**
 * Issue 25, cases 1 and 3: two agents of one group registering one account at the same moment through two
 * plugin-server replicas (real processes on one MariaDB) get one holder and one standby — never two holders; two
 * clusters claiming one name at the same moment get one holder and one refusal — never two clusters under a name. The agents are
 * TestAgent, a stand-in speaking the real gRPC protocol, so both Hellos leave in the same tick (behind a barrier),
 * which two agent processes cannot be made to do. Several rounds, each with its own account and a seeded order and
 * delay between the two Hellos.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startReplicas, type Stack } from '../infra/stack.js';
import { account, TestAgent } from '../unit/plugin-server/helpers.js';
import { PROTOCOL_VERSION } from '../../src/shared/proto.js';

const SEEDS = [1, 2, 3, 4, 5];

describe('two agents of one group registering one account at once through two replicas', () => {
  let stack: Stack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('one holds it, the other is told it stands by (or, another cluster, is refused), for every seed', async () => {
    stack = await startReplicas('ownership', { gracePeriodSeconds: 60, leaseSeconds: 30 }, { namespaces: [] });
    const [a, b] = stack.pair;

    for (const seed of SEEDS) {
      const name = `race-${seed}`;
      const agents = [new TestAgent(a.grpcAddress), new TestAgent(b.grpcAddress)];
      stack.defer(async () => agents.forEach((x) => x.close()));
      // Both streams open before either Hello is written (the barrier).
      await Promise.all(
        agents.map((x) => new Promise<void>((resolve) => x.client.waitForReady(Date.now() + 30_000, () => resolve()))),
      );
      const order = seed % 2 === 0 ? [0, 1] : [1, 0];
      // Case 3 in odd rounds: the second agent is another cluster under the same name (a duplicate, not a standby).
      const cluster = (i: number) => (seed > 3 && i === 1 ? '10.9.9.9:6443' : undefined);
      const hellos = order.map((i) => {
        agents[i]!.send({
          hello: {
            agentId: `agent-${i}`,
            version: 'test',
            zone: '',
            identity: {},
            accounts: [account(name, cluster(i))],
            protocolVersion: PROTOCOL_VERSION,
            shareLoad: false,
          },
        });
        return agents[i]!.next((m) => m.welcome !== undefined, 30_000);
      });
      const welcomes = (await Promise.all(hellos)).map((m) => m.welcome!);
      const accepted = welcomes.filter((w) => w.acceptedAccounts.includes(name));
      const refused = (prefix: RegExp) =>
        welcomes.filter((w) => w.rejectedAccounts.some((r) => r.name === name && prefix.test(r.reason))).length;
      const other = seed > 3 ? refused(/^account name .* already registered/) : refused(/^standby:/);
      expect({ seed, accepted: accepted.length, other }).toEqual({ seed, accepted: 1, other: 1 });
      agents.forEach((x) => x.close());
    }
  });
});
