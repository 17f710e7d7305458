import { afterEach, describe, expect, it, vi } from 'vitest';
import { collectGarbage, HeapRelease } from '../../../src/agent/heap-release.js';

describe('HeapRelease', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('collects once after the syncs are done, not while a list runs again, and at most once per interval', () => {
    vi.useFakeTimers();
    const collect = vi.fn();
    let footprint = 0;
    // Each call a sync's worth bigger: every sync here grew the heap past the threshold.
    const grows = (): number => (footprint += 100 * 1024 * 1024);
    const release = new HeapRelease({ delayMs: 1000, minIntervalMs: 60_000, collect, footprint: grows });

    release.syncsDone();
    release.syncsDone(); // a second idle report before the collection shares it
    vi.advanceTimersByTime(999);
    expect(collect).toHaveBeenCalledTimes(0);
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(1);

    // A relist 10 s later: its end waits for the interval since the last collection.
    vi.advanceTimersByTime(10_000);
    release.syncStarted();
    release.syncsDone();
    vi.advanceTimersByTime(49_999);
    expect(collect).toHaveBeenCalledTimes(1);
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(2);

    // A list that starts before the delay is over cancels the pending collection; stop() does too.
    release.syncsDone();
    vi.advanceTimersByTime(30_000);
    release.syncStarted();
    vi.advanceTimersByTime(120_000);
    expect(collect).toHaveBeenCalledTimes(2);
    release.syncsDone();
    release.stop();
    vi.advanceTimersByTime(120_000);
    expect(collect).toHaveBeenCalledTimes(2);
  });

  it('does not pause for syncs that grew the heap less than the threshold, and collects after one that grew it more', () => {
    vi.useFakeTimers();
    const collect = vi.fn();
    let footprint = 50 * 1024 * 1024;
    const release = new HeapRelease({ delayMs: 1000, minIntervalMs: 60_000, collect, footprint: () => footprint });

    // A small initial sync: the heap already holds 50 MiB (the code loaded at start), the sync adds 4 MiB.
    release.syncStarted();
    footprint += 4 * 1024 * 1024;
    release.syncsDone();
    vi.advanceTimersByTime(1000);
    expect(collect).toHaveBeenCalledTimes(0);

    // A big relist: grown by 200 MiB from its start. A list starting again before the delay keeps the first start.
    release.syncStarted();
    footprint += 150 * 1024 * 1024;
    release.syncsDone();
    vi.advanceTimersByTime(500);
    release.syncStarted();
    footprint += 50 * 1024 * 1024;
    release.syncsDone();
    vi.advanceTimersByTime(999);
    expect(collect).toHaveBeenCalledTimes(0);
    vi.advanceTimersByTime(1);
    expect(collect).toHaveBeenCalledTimes(1);
  });

  it('the real collection gives back the committed heap that garbage grew', () => {
    collectGarbage();
    const before = process.memoryUsage().heapTotal;
    // Allocated and dropped inside a function: nothing of it is reachable once it returns.
    const grow = (): number => Array.from({ length: 300_000 }, (_, i) => ({ s: `object ${i}` })).length;
    expect(grow()).toBe(300_000);
    const grown = process.memoryUsage().heapTotal;
    collectGarbage();
    const after = process.memoryUsage().heapTotal;
    expect(grown - before).toBeGreaterThan(10 * 1024 * 1024);
    expect(after).toBeLessThan(grown - 10 * 1024 * 1024);
  });
});
