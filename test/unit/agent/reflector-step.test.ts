import { describe, expect, it } from 'vitest';
import { Backoff, WATCH_BACKOFF } from '../../../src/agent/backoff.js';
import { KubeApiError } from '../../../src/agent/kube/client.js';
import {
  classifyFailure,
  initialLoopState,
  InitialListIncomplete,
  nextReflectorStep,
  nextRequest,
  StallGuard,
  TRANSIENT_FORBIDDEN_RETRIES,
  watchTimeoutSeconds,
  type ReflectorEvent,
  type ReflectorLoopState,
  type ReflectorRequest,
} from '../../../src/agent/reflector-step.js';
import { ManualClock } from '../../../src/shared/clock.js';
import { expectJittered } from '../../infra/assertions.js';
import { seededRandom } from './_random.js';

const apiError = (status: number) => new KubeApiError(status, 'x', `HTTP ${status}`);

type Outcome =
  | { t: 'gone' | 'forbidden' | 'not-found' | 'stalled' | 'refused' | 'other'; tookMs: number }
  | { t: 'listed'; tookMs: number }
  | { t: 'watch-ended'; received: number; tookMs: number };

interface Trace {
  request: ReflectorRequest;
  waitMs: number;
  restart?: string;
}

/**
 * Runs the reflector's decisions over a scripted series of request outcomes the way reflector.ts does: a clock
 * that moves by each request's duration and each wait, and WATCH_BACKOFF with the given randomness.
 */
function drive(start: ReflectorLoopState, outcomes: Outcome[], random: () => number = () => 0.5) {
  const clock = new ManualClock(1_700_000_000_000);
  const backoff = new Backoff(WATCH_BACKOFF, random);
  let state = start;
  const trace: Trace[] = [];
  for (const o of outcomes) {
    const request = nextRequest(state);
    clock.advance(o.tookMs);
    // What list() itself does with the data: a complete LIST leaves the scope synced at the list's resourceVersion.
    if (o.t === 'listed') state = { ...state, resourceVersion: '100', synced: true };
    const event: ReflectorEvent =
      o.t === 'listed'
        ? { type: 'listed' }
        : o.t === 'watch-ended'
          ? { type: 'watch-ended', received: o.received, elapsedMs: o.tookMs }
          : { type: 'failed', failure: o.t === 'refused' ? 'watch-list-refused' : o.t, at: clock.now() };
    const step = nextReflectorStep(state, event);
    state = step.state;
    if (step.resetBackoff) backoff.reset();
    const waitMs = step.wait === 'backoff' ? backoff.next() : step.wait === 'forbidden-retry' ? -1 : 0;
    clock.advance(Math.max(0, waitMs));
    trace.push({ request, waitMs, ...(step.restart ? { restart: step.restart } : {}) });
  }
  return { trace, state };
}

const streaming = (rv?: string) => initialLoopState(rv, true);
const paginated = (rv?: string) => initialLoopState(rv, false);

describe('reflector: first request', () => {
  it('resumes with a WATCH from a resume point (synced, no relist); lists without one', () => {
    expect([nextRequest(streaming('120')), streaming('120').synced]).toEqual(['watch', true]);
    expect([nextRequest(streaming()), streaming().synced]).toEqual(['streaming-list', false]);
    expect([nextRequest(paginated()), paginated().synced]).toEqual(['list', false]);
    // An empty resume point is no resume point.
    expect(nextRequest(paginated(''))).toBe('list');
  });
});

describe('reflector: 410 storms', () => {
  it('streaming lists: relists at once after a lone 410, backs off (doubling, never reset) in a storm', () => {
    // Every streaming list succeeds and then gets 410 Gone 100 ms later. Rule: relist at once unless the previous
    // 410 came less than 2 s earlier; then wait the backoff (500 ms × 2^n, cap 30 s), which only a watch that
    // ended normally or a LIST resets. Two 410s are (wait + 100 ms) apart: once the wait reaches 2 s the next
    // 410 is no longer "recent", relists at once, and the one after it is recent again.
    const outcomes = Array.from({ length: 13 }, () => ({ t: 'gone' as const, tookMs: 100 }));
    const { trace } = drive(streaming('5'), outcomes);
    expect(trace.map((t) => t.waitMs)).toEqual([0, 500, 1000, 2000, 0, 4000, 0, 8000, 0, 16000, 0, 30000, 0]);
    expect(trace[0]?.request).toBe('watch');
    expect(trace.slice(1).every((t) => t.request === 'streaming-list')).toBe(true);
    // One restart per 410, counted as 'gone' only.
    expect(trace.every((t) => t.restart === 'gone')).toBe(true);
  });

  it('paginated lists: a storm waits the base backoff before each relist (the LIST in between resets it)', () => {
    const outcomes: Outcome[] = [{ t: 'gone', tookMs: 50 }];
    for (let i = 0; i < 4; i++) outcomes.push({ t: 'listed', tookMs: 200 }, { t: 'gone', tookMs: 50 });
    const { trace } = drive(paginated('5'), outcomes);
    expect(trace.map((t) => `${t.request}:${t.waitMs}`)).toEqual([
      'watch:0',
      'list:0',
      'watch:500',
      'list:0',
      'watch:500',
      'list:0',
      'watch:500',
      'list:0',
      'watch:500',
    ]);
  });

  it('a 410 three seconds after the previous one relists at once again', () => {
    const { trace } = drive(streaming('5'), [
      { t: 'gone', tookMs: 100 },
      { t: 'gone', tookMs: 100 },
      { t: 'gone', tookMs: 3000 },
    ]);
    expect(trace.map((t) => t.waitMs)).toEqual([0, 500, 0]);
  });
});

describe('reflector: backoff sequences', () => {
  it('other errors back off 500 ms × 2^n up to 30 s; a normal watch end resets it', () => {
    const errors = Array.from({ length: 8 }, () => ({ t: 'other' as const, tookMs: 10 }));
    const { trace } = drive(streaming('9'), [
      ...errors,
      { t: 'watch-ended', received: 3, tookMs: 10 },
      { t: 'other', tookMs: 10 },
    ]);
    expect(trace.map((t) => t.waitMs)).toEqual([500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 0, 500]);
    expect(trace.map((t) => t.restart)).toEqual([...Array(8).fill('error'), 'timeout', 'error']);
  });

  it('jitter stays within ±20% of each step with a seeded random, and the same seed gives the same delays', () => {
    const errors = Array.from({ length: 12 }, () => ({ t: 'other' as const, tookMs: 10 }));
    const raw = [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, 30000, 30000, 30000];
    const a = drive(streaming('9'), errors, seededRandom(42)).trace.map((t) => t.waitMs);
    const b = drive(streaming('9'), errors, seededRandom(42)).trace.map((t) => t.waitMs);
    const c = drive(streaming('9'), errors, seededRandom(7)).trace.map((t) => t.waitMs);
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
    expectJittered(a, raw, 0.2);
  });
});

describe('reflector: watch ends and timeouts', () => {
  it('a watch ended by the server after more than 1 s, or with events, resumes at once from its resourceVersion', () => {
    for (const [received, tookMs] of [
      [0, 1001],
      [1, 0],
    ] as const) {
      const { trace, state } = drive(streaming('77'), [{ t: 'watch-ended', received, tookMs }]);
      expect(trace).toEqual([{ request: 'watch', waitMs: 0, restart: 'timeout' }]);
      expect(nextRequest(state)).toBe('watch');
      expect(state.resourceVersion).toBe('77');
    }
  });

  it('a watch closed at once and empty is a failure: it backs off, and repeats lengthen the wait', () => {
    const s = streaming('77');
    const step = nextReflectorStep(s, { type: 'watch-ended', received: 0, elapsedMs: 1000 });
    expect(step).toMatchObject({ wait: 'backoff', resetBackoff: false, error: 'watch closed immediately' });
    expect(step.restart).toBeUndefined();
    const closes = Array.from({ length: 3 }, () => ({ t: 'watch-ended' as const, received: 0, tookMs: 5 }));
    expect(drive(s, closes).trace.map((t) => t.waitMs)).toEqual([500, 1000, 2000]);
  });

  it('picks the server-side timeout in [lo, hi) seconds', () => {
    expect(watchTimeoutSeconds([300, 600], () => 0)).toBe(300);
    expect(watchTimeoutSeconds([300, 600], () => 0.5)).toBe(450);
    expect(watchTimeoutSeconds([300, 600], () => 0.999999)).toBe(599);
    const random = seededRandom(1);
    for (let i = 0; i < 100; i++) {
      const t = watchTimeoutSeconds([5, 10], random);
      expect(t >= 5 && t < 10 && Number.isInteger(t)).toBe(true);
    }
  });
});

describe('reflector: stalled initial lists', () => {
  it('a stalled streaming list falls back to paginated LIST for good, after a backoff', () => {
    const { trace, state } = drive(streaming(), [
      { t: 'stalled', tookMs: 20_000 },
      { t: 'listed', tookMs: 100 },
      { t: 'gone', tookMs: 100 },
    ]);
    expect(trace).toEqual([
      { request: 'streaming-list', waitMs: 500, restart: 'stall' },
      { request: 'list', waitMs: 0 },
      { request: 'watch', waitMs: 0, restart: 'gone' },
    ]);
    // It never goes back to streaming lists, even after a 410.
    expect(nextRequest(state)).toBe('list');
  });

  it('the stall guard fires once after the given silence; each chunk re-arms it; holding the stream disarms it', () => {
    const clock = new ManualClock();
    let closed = 0;
    const guard = new StallGuard(clock, 20_000, () => (closed += 1));
    guard.arm();
    clock.advance(19_999);
    expect([guard.fired, closed]).toEqual([false, 0]);
    guard.arm(); // a chunk arrived
    clock.advance(19_999);
    expect(guard.fired).toBe(false);
    guard.disarm(); // send queue full: our own doing, not a stall
    clock.advance(3_600_000);
    expect([guard.fired, closed, clock.pending()]).toEqual([false, 0, []]);
    guard.arm();
    clock.advance(20_000);
    expect([guard.fired, closed]).toEqual([true, 1]);
    clock.advance(60_000);
    expect(closed).toBe(1);
  });

  it('classifies the guard\u2019s error as a stall, and an early end of the stream as an ordinary error', () => {
    expect(classifyFailure(new InitialListIncomplete(true))).toBe('stalled');
    expect(classifyFailure(new InitialListIncomplete(false))).toBe('other');
    const early = nextReflectorStep(streaming(), { type: 'failed', failure: 'other', at: 0 });
    expect([early.wait, early.restart, early.state.streamingLists]).toEqual(['backoff', 'error', true]);
  });
});

describe('reflector: other failures', () => {
  it('classifies API errors', () => {
    expect([410, 403, 422, 400, 406, 404, 500].map((s) => classifyFailure(apiError(s)))).toEqual([
      'gone',
      'forbidden',
      'watch-list-refused',
      'watch-list-refused',
      'watch-list-refused',
      'not-found',
      'other',
    ]);
  });

  it('streaming lists refused: LIST at once; the same status on a resumed watch is an ordinary error', () => {
    const refused = nextReflectorStep(streaming(), { type: 'failed', failure: 'watch-list-refused', at: 0 });
    expect([refused.wait, refused.restart, nextRequest(refused.state)]).toEqual(['none', undefined, 'list']);
    const onWatch = nextReflectorStep(streaming('3'), { type: 'failed', failure: 'watch-list-refused', at: 0 });
    expect([onWatch.wait, onWatch.restart, onWatch.state.streamingLists]).toEqual(['backoff', 'error', true]);
  });

  it('403 on a scope never readable: reported once, retried on the slow timer; the next success reports access back', () => {
    const { trace, state } = drive(streaming(), [
      { t: 'forbidden', tookMs: 5 },
      { t: 'forbidden', tookMs: 5 },
    ]);
    expect(trace.map((t) => [t.request, t.waitMs])).toEqual([
      ['streaming-list', -1],
      ['streaming-list', -1],
    ]);
    const first = nextReflectorStep(streaming(), { type: 'failed', failure: 'forbidden', at: 0 });
    expect([first.report, first.state.synced, first.state.resourceVersion]).toEqual(['forbidden', false, undefined]);
    expect(nextReflectorStep(state, { type: 'failed', failure: 'forbidden', at: 0 }).report).toBeUndefined();
    const back = nextReflectorStep(state, { type: 'watch-ended', received: 4, elapsedMs: 10 });
    expect([back.report, back.state.forbidden, back.state.forbiddenStreak]).toEqual(['allowed', false, 0]);
  });

  it('403 on a scope that was readable (an API server filling its RBAC caches): backs off in place a few times', () => {
    const forbidden: Outcome[] = Array.from({ length: TRANSIENT_FORBIDDEN_RETRIES }, () => ({
      t: 'forbidden',
      tookMs: 5,
    }));
    // Access back within the retries: the watch resumes where it was, nothing reported, no relist.
    const { trace, state } = drive(streaming('8'), [...forbidden, { t: 'watch-ended', received: 1, tookMs: 50 }]);
    expect(trace.map((t) => [t.request, t.waitMs > 0, t.restart])).toEqual([
      ...forbidden.map(() => ['watch', true, 'error']),
      ['watch', false, 'timeout'],
    ]);
    expect([state.resourceVersion, state.synced, state.forbidden, state.forbiddenStreak]).toEqual([
      '8',
      true,
      false,
      0,
    ]);
    // Still 403 after them: taken for forbidden, reported once, left to the slow timer, relisted when allowed.
    const after = drive(streaming('8'), [...forbidden, { t: 'forbidden', tookMs: 5 }, { t: 'forbidden', tookMs: 5 }]);
    expect(after.trace.slice(-2).map((t) => [t.request, t.waitMs])).toEqual([
      ['watch', -1],
      ['streaming-list', -1],
    ]);
    let s = streaming('8');
    const reports: (string | undefined)[] = [];
    for (let i = 0; i <= TRANSIENT_FORBIDDEN_RETRIES + 1; i++) {
      const step = nextReflectorStep(s, { type: 'failed', failure: 'forbidden', at: 0 });
      reports.push(step.report);
      s = step.state;
    }
    expect(reports.filter((r) => r === 'forbidden')).toHaveLength(1);
    expect(reports[TRANSIENT_FORBIDDEN_RETRIES]).toBe('forbidden');
  });

  it('404 asks for rediscovery and backs off, keeping the resourceVersion', () => {
    const step = nextReflectorStep(streaming('8'), { type: 'failed', failure: 'not-found', at: 0 });
    expect([step.report, step.wait, step.restart, step.state.resourceVersion]).toEqual([
      'not-found',
      'backoff',
      'error',
      '8',
    ]);
  });
});
