/**
 * Time as the state machines (reflector, stream client, account runner) see it: the current time and one-shot
 * timers. Passed in rather than read from globals so their edge cases (stalls, storms, backoff sequences) can be
 * unit-tested in milliseconds with a ManualClock, the way client-go's fake clock serves its reflector tests.
 */
export interface Clock {
  now(): number;
  /** Runs `fn` once after `ms`; the timer never keeps the process alive on its own. */
  setTimeout(fn: () => void, ms: number): ClockTimer;
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** Opaque handle of a Clock's timer. */
export type ClockTimer = { readonly __clockTimer: unique symbol } | NodeJS.Timeout;

export const realClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
  clearTimeout: (timer) => clearTimeout(timer as NodeJS.Timeout | undefined),
};

/** Resolves after `ms` on `clock`, or at once (without rejecting) when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal, clock: Clock = realClock): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = clock.setTimeout(done, ms);
    function done(): void {
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

interface ManualTimer {
  id: number;
  at: number;
  fn: () => void;
}

/**
 * A clock that moves only when told: `advance(ms)` fires, in time order, every timer due by then (timers set by
 * those callbacks too, if due). For unit tests; nothing in the runtime uses it.
 */
export class ManualClock implements Clock {
  private timers: ManualTimer[] = [];
  private nextId = 1;

  constructor(private time = 0) {}

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): ClockTimer {
    const timer = { id: this.nextId++, at: this.time + Math.max(0, ms), fn };
    this.timers.push(timer);
    return timer.id as unknown as ClockTimer;
  }

  clearTimeout(timer: ClockTimer | undefined): void {
    this.timers = this.timers.filter((t) => t.id !== (timer as unknown as number));
  }

  /** Timers not yet fired, as delays from now (sorted). */
  pending(): number[] {
    return this.timers.map((t) => t.at - this.time).sort((a, b) => a - b);
  }

  advance(ms: number): void {
    const until = this.time + ms;
    for (;;) {
      // Earliest first; equal times in the order they were set.
      const due = this.timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at || a.id - b.id)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = due.at;
      due.fn();
    }
    this.time = until;
  }
}
