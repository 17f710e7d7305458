import { describe, expect, it } from 'vitest';
import { Backoff, RECONNECT_BACKOFF } from '../../../src/agent/backoff.js';

describe('Backoff', () => {
  it('grows by the multiplier up to the cap (no jitter at random = 0.5)', () => {
    const b = new Backoff(RECONNECT_BACKOFF, () => 0.5);
    const delays = Array.from({ length: 14 }, () => b.next());
    expect(delays.slice(0, 5)).toEqual([1000, 1600, 2560, 4096, 6554]);
    expect(delays.at(-1)).toBe(120_000);
    expect(Math.max(...delays)).toBe(120_000);
  });

  it('jitters within ±20%', () => {
    expect(new Backoff(RECONNECT_BACKOFF, () => 0).next()).toBe(800);
    expect(new Backoff(RECONNECT_BACKOFF, () => 0.999999).next()).toBe(1200);
    const capped = new Backoff(RECONNECT_BACKOFF, () => 1);
    for (let i = 0; i < 30; i++) capped.next();
    expect(capped.next()).toBe(144_000);
  });

  it('reset starts over from the base delay', () => {
    const b = new Backoff(RECONNECT_BACKOFF, () => 0.5);
    b.next();
    b.next();
    b.reset();
    expect(b.next()).toBe(1000);
  });
});
