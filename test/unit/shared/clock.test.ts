import { describe, expect, it } from 'vitest';
import { ManualClock, sleep } from '../../../src/shared/clock.js';

describe('ManualClock', () => {
  it('fires due timers in time order (ties in the order set), including timers set by a firing one', () => {
    const clock = new ManualClock(100);
    const fired: string[] = [];
    clock.setTimeout(() => fired.push(`b@${clock.now()}`), 50);
    clock.setTimeout(() => {
      fired.push(`a@${clock.now()}`);
      clock.setTimeout(() => fired.push(`c@${clock.now()}`), 20);
    }, 10);
    clock.setTimeout(() => fired.push(`d@${clock.now()}`), 50);
    const cancelled = clock.setTimeout(() => fired.push('x'), 5);
    clock.clearTimeout(cancelled);
    clock.advance(49);
    expect([fired, clock.now(), clock.pending()]).toEqual([['a@110', 'c@130'], 149, [1, 1]]);
    clock.advance(1);
    expect(fired).toEqual(['a@110', 'c@130', 'b@150', 'd@150']);
  });

  it('drives sleep(), which an abort ends at once without its timer', async () => {
    const clock = new ManualClock();
    let woke = false;
    const slept = sleep(1000, undefined, clock).then(() => (woke = true));
    clock.advance(999);
    await Promise.resolve();
    expect(woke).toBe(false);
    clock.advance(1);
    await slept;
    expect(woke).toBe(true);
    const ac = new AbortController();
    const aborted = sleep(60_000, ac.signal, clock);
    ac.abort();
    await aborted;
    expect(clock.pending()).toEqual([]);
  });
});
