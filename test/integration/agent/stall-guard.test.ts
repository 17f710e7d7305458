/**
 * The streaming-list stall guard against the real API server: Toxiproxy sits between the agent and the
 * kube-apiserver, slows the link so the initial streaming list of one namespace takes many seconds, then holds
 * every byte mid-list. The guard (kubernetes.initialListStallSeconds) must abandon the stalled list, count it,
 * and list the scope again with paginated LIST; once the link flows again the plugin-server's cache must equal
 * the API server's state exactly (cache checker diff 0).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WatchInfo } from '../../../src/agent/account.js';
import { checkCache, waitForCacheToMatch, type CacheCheckOptions } from '../../infra/cache-checker.js';
import { createNamespace, kubectl, testEnv, waitFor } from '../../infra/index.js';
import { AgentProcess, PluginServerProcess } from '../../infra/processes.js';
import { apiServerHostPort, kubeconfigThrough, Toxiproxy } from '../../infra/toxiproxy.js';

// ~3 KB each: about 1.9 MB of streaming list, which the bandwidth toxic stretches over ~30 s.
const CONFIGMAPS = 600;
const RATE_KB_PER_S = 64;
const STALL_SECONDS = 1;
const STALL_MSG = 'streaming list stalled before its initial-events-end bookmark; using paginated LIST for this scope';

describe('streaming-list stall guard through Toxiproxy', () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  let toxi: Toxiproxy;
  let server: PluginServerProcess;
  let agent: AgentProcess;
  let ns: string;

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sa-stall-'));
    ns = await createNamespace('stall');
    const items = Array.from({ length: CONFIGMAPS }, (_, i) => ({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `cm-${i}`, namespace: ns },
      data: { blob: `${i}-`.padEnd(3000, 'x') },
    }));
    const list = join(dir, 'configmaps.json');
    writeFileSync(list, JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
    // create, not apply: apply would copy each object into an annotation and double the list.
    await kubectl(['create', '-f', list]);

    toxi = await Toxiproxy.start(dir);
    cleanups.push(() => toxi.stop());
    const through = await toxi.createProxy('apiserver', apiServerHostPort());
    await toxi.addToxic('apiserver', 'slow', 'downstream', {
      type: 'bandwidth',
      attributes: { rate: RATE_KB_PER_S },
    });

    server = await PluginServerProcess.start({ dir });
    cleanups.push(() => server.stop());
    const accounts = [
      {
        name: 'stalled',
        kubeconfigFile: kubeconfigThrough(through, join(dir, 'kubeconfig-through-toxiproxy')),
        namespaces: [ns],
        kinds: ['ConfigMap'],
      },
    ];
    agent = await AgentProcess.start({
      dir,
      agentId: 'stall-agent',
      serverAddress: server.grpcAddress,
      accounts,
      extra: {
        kubernetes: {
          accounts,
          rediscoverySeconds: 300,
          streamingLists: 'auto',
          initialListStallSeconds: STALL_SECONDS,
        },
      },
      waitReady: false,
    });
    cleanups.push(() => agent.stop());
  });
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  });

  const scope = async (): Promise<WatchInfo | undefined> => {
    const res = await fetch(`${agent.adminBase}/watches?account=stalled`).catch(() => undefined);
    if (!res?.ok) return undefined;
    return ((await res.json()) as WatchInfo[]).find((w) => w.kind === 'ConfigMap' && w.namespace === ns);
  };
  const stallRestarts = async (): Promise<number> => {
    const text = await (await fetch(`${agent.adminBase}/metrics`)).text();
    const m = /^scale_agent_agent_watch_restarts_total\{reason="stall"\} (\d+)$/m.exec(text);
    return m ? Number(m[1]) : 0;
  };
  const stallLogs = (): { msg: string; scope?: string; afterMs?: number }[] =>
    readFileSync(agent.logFile, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg: string; scope?: string; afterMs?: number })
      .filter((l) => l.msg === STALL_MSG);
  const checked = (): CacheCheckOptions => ({
    httpBase: server.httpBase,
    account: 'stalled',
    kubeconfig: testEnv().kubeconfig,
    kinds: [{ apiVersion: 'v1', kind: 'ConfigMap', namespaced: true }],
    namespaces: [ns],
  });

  it('abandons a streaming list stalled mid-way, relists with LIST, and the cache converges once the link flows', async () => {
    // Mid-list: the streaming list has delivered objects but is far from its end.
    const listing = await waitFor(
      'the streaming list to be delivering objects',
      async () => {
        const w = await scope();
        return w && w.state === 'listing' && w.events > 0 ? w : undefined;
      },
      90_000,
    );
    expect(listing.synced).toBe(false);
    expect(listing.relists).toBe(1);
    expect(listing.events).toBeLessThan(CONFIGMAPS);

    // Hold every byte from the API server (a latency toxic keeps what it holds and lets it go when removed).
    await toxi.addToxic('apiserver', 'hold', 'downstream', {
      type: 'latency',
      attributes: { latency: 3_600_000 },
    });
    await toxi.removeToxic('apiserver', 'slow');

    // The guard fires: logged with the scope, counted as a 'stall' restart, and the scope lists again (LIST).
    const logged = await waitFor('the stall guard to fire', () => (stallLogs().length > 0 ? stallLogs() : undefined));
    expect(logged).toHaveLength(1);
    expect(logged[0]?.scope).toBe(`stalled//ConfigMap/${ns}`);
    expect(logged[0]?.afterMs).toBeGreaterThanOrEqual(STALL_SECONDS * 1000);
    expect(await stallRestarts()).toBe(1);
    const retried = await waitFor('the scope to list again', async () => {
      const w = await scope();
      return w && w.relists === 2 ? w : undefined;
    });
    expect([retried.state, retried.synced]).toEqual(['listing', false]);
    // Nothing of the abandoned list counted as a complete sync: the cache lacks objects.
    expect((await checkCache(checked())).missing.length).toBeGreaterThan(0);

    await toxi.removeToxic('apiserver', 'hold');
    const synced = await waitFor(
      'the LIST to complete',
      async () => {
        const w = await scope();
        return w?.synced && w.state === 'watching' ? w : undefined;
      },
      90_000,
    );
    // One streaming list (abandoned) and one paginated LIST: no further attempts, and no second stall.
    expect(synced.relists).toBe(2);
    expect(await stallRestarts()).toBe(1);
    const diff = await waitForCacheToMatch(checked(), 60_000);
    // The namespace's kube-root-ca.crt is the one more object.
    expect([diff.equal, diff.compared]).toEqual([true, CONFIGMAPS + 1]);

    // The scope lives on as a watch (from the LIST's resourceVersion) after the fallback.
    await kubectl(['create', 'configmap', 'after-stall', '-n', ns]);
    const after = await waitForCacheToMatch(checked(), 60_000);
    expect(after.compared).toBe(CONFIGMAPS + 2);
  });
});
