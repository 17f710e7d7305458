import { collectDefaultMetrics, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { parseHeapSample, sampleProcess } from '../../infra/faults/process-sample.js';

describe('parseHeapSample', () => {
  it("reads this process's heap from prom-client's default metrics under a prefix", async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: 'scale_agent_agent_' });
    const heap = parseHeapSample(await registry.metrics(), 'scale_agent_agent_');
    expect(heap).toBeDefined();
    expect(heap!.usedKb).toBeGreaterThan(0);
    expect(heap!.totalKb).toBeGreaterThanOrEqual(heap!.usedKb);
    expect(heap!.newSpaceTotalKb).toBeGreaterThan(0);
    expect(heap!.oldSpaceUsedKb).toBeGreaterThan(0);
    expect(heap!.externalKb).toBeGreaterThan(0);
  });

  it('says nothing for text without those metrics (another prefix, an error page)', async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: 'scale_agent_plugin_server_' });
    expect(parseHeapSample(await registry.metrics(), 'scale_agent_agent_')).toBeUndefined();
    expect(parseHeapSample('', 'scale_agent_agent_')).toBeUndefined();
  });
});

describe('sampleProcess', () => {
  it('reads RSS, descriptors and CPU time of a live process from /proc, and nothing for a gone one', () => {
    const before = sampleProcess(process.pid)!;
    let x = 0;
    const until = process.cpuUsage().user + 200_000;
    while (process.cpuUsage().user < until) x += Math.sqrt(x + 1);
    const after = sampleProcess(process.pid)!;
    expect(before.rssKb).toBeGreaterThan(0);
    // VmRSS is RssAnon + RssFile + RssShmem (/proc/<pid>/status, sampled at once); a Node process has some of both.
    expect(before.rssAnonKb).toBeGreaterThan(0);
    expect(before.rssFileKb).toBeGreaterThan(0);
    expect(before.rssAnonKb + before.rssFileKb).toBeLessThanOrEqual(before.rssKb);
    expect(before.fds).toBeGreaterThan(2);
    expect(after.cpuSeconds).toBeGreaterThan(before.cpuSeconds);
    expect(sampleProcess(2 ** 22 + 1)).toBeUndefined();
  });
});
