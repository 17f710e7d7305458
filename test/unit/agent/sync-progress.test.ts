import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SyncProgress } from '../../../src/agent/sync-progress.js';

function setup() {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) });
  let now = 1_000_000;
  const progress = new SyncProgress(log, 5000, () => now);
  return { lines, progress, advance: (ms: number) => (now += ms) };
}

describe('SyncProgress', () => {
  it('logs at most every interval, with a total and ETA only when every listing scope told its size', () => {
    const { lines, progress, advance } = setup();
    progress.listed('a', 500, 2000);
    expect(progress.due()).toBe(false);
    progress.tick(['a', 'b'], 2);
    expect(lines).toEqual([]); // not yet 5 s
    advance(5000);
    expect(progress.due()).toBe(true);
    progress.tick(['a', 'b'], 2);
    // Scope b waits for a sync slot: its size is unknown, so no total.
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'initial sync progress', objects: 500, objectsPerSecond: 100 });
    expect(lines[0]).not.toHaveProperty('total');
    expect(lines[0]).not.toHaveProperty('etaSeconds');

    progress.listed('b', 500, 1000);
    advance(1000);
    progress.tick(['a', 'b'], 2);
    expect(lines).toHaveLength(1); // throttled
    advance(4000);
    progress.tick(['a', 'b'], 2);
    // 1000 of 3000 objects in 10 s: 100/s, so 2000 more take 20 s.
    expect(lines[1]).toMatchObject({ objects: 1000, total: 3000, objectsPerSecond: 100, etaSeconds: 20, scopes: 2 });
  });

  it('counts a finished scope by what it listed, and logs the end', () => {
    const { lines, progress, advance } = setup();
    progress.listed('a', 100, undefined);
    progress.synced('a', 300);
    advance(5000);
    progress.tick(['b'], 2);
    expect(lines[0]).toMatchObject({ objects: 300, scopesSynced: 1 });
    expect(lines[0]).not.toHaveProperty('total');
    progress.synced('b', 200);
    advance(5000);
    progress.done(2);
    expect(lines[1]).toMatchObject({
      msg: 'initial sync done',
      objects: 500,
      scopes: 2,
      seconds: 10,
      objectsPerSecond: 50,
    });
  });
});
