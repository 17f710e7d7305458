import { describe, expect, it } from 'vitest';
import { Backoff } from '../../../src/agent/backoff.js';
import {
  afterStreamEnd,
  heartbeatDue,
  heartbeatIntervalMs,
  reconnectBackoff,
  type StreamEnded,
} from '../../../src/agent/stream-step.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { expectJittered } from '../../infra/assertions.js';
import { seededRandom } from './_random.js';

// The schema's defaults (the Armory agent's clouddriver.backoff): 1 s × 1.6, jitter 0.2, at most 120 s.
const DEFAULTS = { baseDelaySeconds: 1, multiplier: 1.6, jitter: 0.2, maxDelaySeconds: 120 };

/** The stream loop's waits over a series of stream ends, as stream.ts computes them. */
function reconnectWaits(ends: StreamEnded[], random: () => number): (number | 'now' | 'stop')[] {
  let backoff = new Backoff(reconnectBackoff(DEFAULTS), random);
  const out: (number | 'now' | 'stop')[] = [];
  for (const e of ends) {
    const step = afterStreamEnd(e);
    if (step.next !== 'backoff') {
      out.push(step.next === 'stop' ? 'stop' : 'now');
      continue;
    }
    if (step.resetBackoff) backoff = new Backoff(reconnectBackoff(DEFAULTS), random);
    out.push(backoff.next());
  }
  return out;
}

const failed: StreamEnded = { aborted: false, restartRequested: false, welcomed: false };
const lost: StreamEnded = { aborted: false, restartRequested: false, welcomed: true };

describe('stream client: after a stream ends', () => {
  it('stops when aborted, redials at once on restart() without counting a reconnect, else backs off', () => {
    expect(afterStreamEnd({ ...lost, aborted: true, restartRequested: true })).toEqual({
      next: 'stop',
      countReconnect: false,
      resetBackoff: false,
    });
    expect(afterStreamEnd({ ...lost, restartRequested: true })).toEqual({
      next: 'redial-now',
      countReconnect: false,
      resetBackoff: false,
    });
    expect(afterStreamEnd(failed)).toEqual({ next: 'backoff', countReconnect: true, resetBackoff: false });
    expect(afterStreamEnd(lost)).toEqual({ next: 'backoff', countReconnect: true, resetBackoff: true });
  });

  it('failed dials wait 1 s × 1.6^n (cap 120 s); a stream that was welcomed starts the sequence over', () => {
    const mid = () => 0.5; // no jitter
    const ends = [...Array(12).fill(failed), lost, failed, { ...failed, restartRequested: true }, failed];
    expect(reconnectWaits(ends, mid)).toEqual([
      1000,
      1600,
      2560,
      4096,
      6554,
      10486,
      16777,
      26844,
      42950,
      68719,
      109951,
      120000,
      1000,
      1600,
      'now',
      2560,
    ]);
  });

  it('reconnect jitter stays within ±20% with a seeded random', () => {
    const raw = [1000, 1600, 2560, 4096, 6554, 10486, 16777, 26844, 42950, 68719, 109951, 120000, 120000];
    const waits = reconnectWaits(Array(raw.length).fill(failed), seededRandom(3)) as number[];
    expectJittered(waits, raw, 0.2);
  });
});

describe('stream client: heartbeats', () => {
  it('uses the shorter positive interval of agent and server', () => {
    expect(heartbeatIntervalMs(30, 10)).toBe(10_000);
    expect(heartbeatIntervalMs(0, 10)).toBe(10_000);
    expect(heartbeatIntervalMs(5, 0)).toBe(5_000);
    expect(heartbeatIntervalMs(0, 0)).toBeUndefined();
  });

  it('sends one only after 90% of the interval without a write, checked every half interval', () => {
    expect(heartbeatDue(8_999, 0, 10_000)).toBe(false);
    expect(heartbeatDue(9_000, 0, 10_000)).toBe(true);
    // The loop of stream.ts on a manual clock: Hello written at 0, a data write at 12 s.
    const clock = new ManualClock();
    const interval = 10_000;
    let lastWrite = 0;
    const beats: number[] = [];
    const check = (): void => {
      if (heartbeatDue(clock.now(), lastWrite, interval)) {
        lastWrite = clock.now();
        beats.push(clock.now());
      }
      clock.setTimeout(check, interval / 2);
    };
    clock.setTimeout(check, interval / 2);
    clock.setTimeout(() => (lastWrite = clock.now()), 12_000);
    clock.advance(40_000);
    // Checks at 5, 10, 15, ... s: 10 s (10 s silent), 25 s (13 s since the write at 12 s), 35 s.
    expect(beats).toEqual([10_000, 25_000, 35_000]);
  });
});
