import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { CACHED_OBJECTS_MAX_AGE_MS, PluginServerMetrics } from '../../../src/plugin-server/metrics.js';
import { storeChange } from '../../infra/records.js';

function cachedObjects(text: string): string[] {
  return text.split('\n').filter((l) => l.startsWith('scale_agent_plugin_server_cached_objects{'));
}

describe('plugin-server /metrics', () => {
  it('counts the cache at most once per max age, however often it is scraped, and shows new counts after', async () => {
    const store = new MemoryCacheStore();
    let countQueries = 0;
    const counts = store.counts.bind(store);
    store.counts = () => {
      countQueries += 1;
      return counts();
    };
    let now = 1_000_000;
    const accounts = new AccountRegistry(store, pino({ level: 'silent' }), { gracePeriodMs: 60_000 });
    const metrics = new PluginServerMetrics({ store, accounts, now: () => now });
    const change = (name: string, rv: string) =>
      storeChange(name, rv, {
        json: JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'ns' } }),
      });
    await store.apply([change('a', '1')]);

    // Scrapes at once and in a burst: one count.
    const burst = await Promise.all([metrics.registry.metrics(), metrics.registry.metrics()]);
    for (let i = 0; i < 5; i++) burst.push(await metrics.registry.metrics());
    expect(countQueries).toBe(1);
    for (const text of burst)
      expect(cachedObjects(text)).toEqual([
        'scale_agent_plugin_server_cached_objects{account="dev",kind="ConfigMap"} 1',
      ]);

    // Within the max age the snapshot stands even though the cache grew; past it, one new count shows the growth.
    await store.apply([change('b', '2')]);
    now += CACHED_OBJECTS_MAX_AGE_MS - 1;
    expect(cachedObjects(await metrics.registry.metrics())).toEqual([
      'scale_agent_plugin_server_cached_objects{account="dev",kind="ConfigMap"} 1',
    ]);
    now += 1;
    expect(cachedObjects(await metrics.registry.metrics())).toEqual([
      'scale_agent_plugin_server_cached_objects{account="dev",kind="ConfigMap"} 2',
    ]);
    expect(countQueries).toBe(2);
  });
});
