/**
 * Issue 25: placement of a dynamic account no agent holds, between replicas. Two replicas (real DynamicAccounts and
 * AccountRegistry instances) follow one definition store, each with one eligible agent (a stand-in session that
 * records what it is sent); the definition was written through a third replica with no agent. Both see it unheld for
 * a lease period and place it at the same moment: exactly one sends it to its agent, and the store records that
 * placement. Seeded rounds vary which replica goes first and how their steps interleave.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { DynamicAccounts } from '../../../src/plugin-server/accounts/dynamic.js';
import {
  MemoryDynamicAccountStore,
  type DynamicDefinition,
} from '../../../src/plugin-server/accounts/dynamic-store.js';
import { AuditLog } from '../../../src/plugin-server/audit.js';
import { ANONYMOUS } from '../../../src/plugin-server/auth/identity.js';
import { AuthorizationPolicy } from '../../../src/plugin-server/auth/policy.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import type { AccountsChanged } from '../../../src/shared/proto.js';
import { seededRandom } from '../agent/_random.js';

const LEASE_MS = 3_000;
const ROUNDS = 40;
const log = pino({ level: 'silent' });

function definition(name: string): DynamicDefinition {
  return {
    name,
    zoneId: '',
    source: 'kubeconfigFile',
    kubeconfigFile: '/etc/kube/config',
    namespaces: [],
    omitNamespaces: [],
    kinds: [],
    omitKinds: [],
    onlyNamespacedResources: false,
    enabled: true,
    errorMessage: '',
    failedCount: 0,
    createdAt: 1,
    updatedAt: 1,
  };
}

function world() {
  const clock = { now: 1_000_000 };
  const now = () => clock.now;
  const cache = new MemoryCacheStore(now);
  const definitions = new MemoryDynamicAccountStore();
  const replica = (id: string) => {
    const sent: AccountsChanged[] = [];
    const session = {
      id: `session-of-${id}`,
      agentId: `agent-of-${id}`,
      zone: '',
      identity: ANONYMOUS,
      open: true,
      sendAccountsChanged: (m: AccountsChanged) => sent.push(m),
    };
    const registry = new AccountRegistry(cache, log, {
      gracePeriodMs: 60_000,
      leaseMs: LEASE_MS,
      replica: { id, url: '' },
      now,
      monotonicNow: now,
    });
    const dynamic = new DynamicAccounts({
      store: definitions,
      registry,
      policy: new AuthorizationPolicy(undefined, false),
      sessions: () => [session],
      audit: new AuditLog(log),
      log,
      now,
    });
    const placed = (name: string) => sent.filter((m) => m.definitions.some((d) => d.account?.name === name)).length;
    return { id, dynamic, placed };
  };
  return { clock, definitions, replicas: [replica('replica-a'), replica('replica-b')] };
}

/** Lets every pending promise (a placement's conditional write) run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('placing an unheld dynamic account from two replicas at once', () => {
  it('exactly one replica places it, in every seeded round', async () => {
    const { clock, definitions, replicas } = world();
    for (const r of replicas) await r.dynamic.load();
    for (let round = 1; round <= ROUNDS; round++) {
      const random = seededRandom(round);
      const name = `dyn-${round}`;
      // Written through a replica with no agent: nobody places it at once.
      expect(await definitions.save({ definition: definition(name) }, 'new')).toBeDefined();
      for (const r of replicas) await r.dynamic.sync();
      await settle();
      expect(replicas.map((r) => r.placed(name))).toEqual([0, 0]);
      // A lease period later both see it still unheld, and follow the store at the same moment.
      clock.now += LEASE_MS;
      const order = random() < 0.5 ? [0, 1] : [1, 0];
      await Promise.all(
        order.map(async (i) => {
          for (let n = Math.floor(random() * 4); n > 0; n--) await Promise.resolve();
          await replicas[i]!.dynamic.sync();
        }),
      );
      await settle();
      const placed = replicas.map((r) => r.placed(name));
      expect({ round, placed: placed.reduce((a, b) => a + b) }).toEqual({ round, placed: 1 });
      // The store says which replica placed it; both follow that.
      const winner = replicas[placed.indexOf(1)]!;
      const row = (await definitions.list()).find((r) => r.definition.name === name);
      expect(row?.definition.placement).toEqual({ agentId: `agent-of-${winner.id}`, replica: winner.id });
      for (const r of replicas) await r.dynamic.sync();
      await settle();
      expect(replicas.map((r) => r.placed(name))).toEqual(placed);
    }
  });
});
