/**
 * Load-sharing agent replicas (docs/architecture.md#agent-replicas), real processes: one plugin-server, two agents of
 * one group (`loadSharing: true`, each its own agentId) offering the same six accounts on the shared control plane.
 * The first holds all six; when the second joins, every account the second ranks first for (ownership.ts
 * placementRank) is handed over to it, one account at a time, while ConfigMaps are created: the split equals the
 * placement function's, and the cache checker finds every object in every account's cache (0 lost). Then the first
 * is killed: the second holds all six, still 0 lost. Times to rebalance go to the log (no threshold).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { preferredAgent } from '../../src/plugin-server/ownership.js';
import { waitForCacheToMatch } from '../infra/cache-checker.js';
import { kubectl, waitFor } from '../infra/index.js';
import { startStack, type Stack } from '../infra/stack.js';

const NAMES = Array.from({ length: 6 }, (_, i) => `ls-${i}`);
const AGENTS = ['share-1', 'share-2'];

interface AccountView {
  state: string;
  agentId: string;
}

describe('two load-sharing agents of one group', () => {
  let stack: Stack | undefined;
  afterAll(async () => {
    await stack?.stop();
  });

  it('split the accounts as placed, hand over without losing a change, and take over a dead one', async () => {
    const accounts = NAMES.map((name) => ({ name, kinds: ['ConfigMap'] }));
    stack = await startStack({
      name: 'load-sharing',
      store: 'memory',
      server: { extra: { accounts: { gracePeriodSeconds: 60, leaseSeconds: 3 } } },
      agent: { agentId: AGENTS[0], accounts, extra: { loadSharing: true } },
    });
    const { ns } = stack;
    const holders = async () => {
      const out: Record<string, string> = {};
      for (const name of NAMES) {
        const { status, body } = await stack!.get<AccountView>(`/armory/accounts/${name}`);
        out[name] = status === 200 && body.state === 'ACTIVE' ? body.agentId : '';
      }
      return out;
    };
    expect(Object.values(await holders())).toEqual(NAMES.map(() => AGENTS[0]));

    // Changes keep coming while the accounts move (each account watches the same namespace): ten ConfigMaps a call.
    let created = 0;
    const churn = () => {
      let stop = false;
      const run = (async () => {
        while (!stop) {
          const items = Array.from({ length: 10 }, () => ({
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: { name: `cm-${created++}`, namespace: ns },
            data: { k: 'v' },
          }));
          await kubectl(['create', '-f', '-'], { input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) });
        }
      })();
      return async () => {
        stop = true;
        await run;
      };
    };
    const stopChurn = churn();

    const placed = Object.fromEntries(NAMES.map((n) => [n, preferredAgent(n, AGENTS)]));
    // Both agents get a share of these names (else the test would prove nothing about sharing).
    expect(new Set(Object.values(placed))).toEqual(new Set(AGENTS));
    await stack.addAgent({ agentId: AGENTS[1], accounts, extra: { loadSharing: true }, waitReady: false });
    // Timed from its stream's Welcome (the process's own start is not the rebalance).
    await waitFor('the second agent to connect', async () =>
      (await stack!.get<{ agentId: string }[]>('/armory/agents')).body.some((a) => a.agentId === AGENTS[1])
        ? true
        : undefined,
    );
    const joined = Date.now();
    await waitFor('the accounts to be held as placed', async () =>
      JSON.stringify(await holders()) === JSON.stringify(placed) ? true : undefined,
    );
    const rebalanceMs = Date.now() - joined;
    await stopChurn();
    for (const name of NAMES) await waitForCacheToMatch(stack.cacheCheck(name));
    console.log(
      `load sharing: rebalanced ${NAMES.length} accounts in ${rebalanceMs} ms; ${created} ConfigMaps, 0 lost`,
    );

    // The second agent's own view agrees: it watches the accounts it was given and stands by for the others.
    const second = stack.agents[1]!;
    const view = (await (await fetch(`${second.adminBase}/accounts`)).json()) as { name: string; state: string }[];
    for (const a of view) expect(a.state === 'rejected', a.name).toBe(placed[a.name] !== AGENTS[1]);

    const stopMore = churn();
    const killed = Date.now();
    await stack.agent.kill();
    await waitFor('the second agent to hold every account', async () =>
      Object.values(await holders()).every((h) => h === AGENTS[1]) ? true : undefined,
    );
    const takeoverMs = Date.now() - killed;
    await stopMore();
    for (const name of NAMES) await waitForCacheToMatch(stack.cacheCheck(name));
    console.log(
      `load sharing: took over ${NAMES.length} accounts of a killed agent in ${takeoverMs} ms; ${created} ConfigMaps, 0 lost`,
    );
  });
});
