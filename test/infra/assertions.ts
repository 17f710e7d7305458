/** Checks that tests of several areas make the same way. */
import { expect } from 'vitest';

/**
 * The error a call throws, when a test goes on to look at it (its code, its message, its details): the test fails
 * when the call throws nothing or an error of another type, which is then rethrown as it was.
 */
type ErrorType<E> = abstract new (...args: never[]) => E;

export function thrown<E extends Error>(type: ErrorType<E>, fn: () => unknown): E {
  try {
    fn();
  } catch (e) {
    if (e instanceof type) return e;
    throw e;
  }
  throw new Error(`expected a ${type.name}, nothing was thrown`);
}

/** The same for a call that rejects. */
export async function rejection<E extends Error>(type: ErrorType<E>, fn: () => Promise<unknown>): Promise<E> {
  try {
    await fn();
  } catch (e) {
    if (e instanceof type) return e;
    throw e;
  }
  throw new Error(`expected a ${type.name}, the call resolved`);
}

/**
 * Backoff delays with jitter: each within ±`fraction` of its bare step (whole milliseconds either way), and jitter
 * applied at all (a seeded sequence is not the bare steps).
 */
export function expectJittered(delays: number[], steps: number[], fraction: number): void {
  expect(delays).toHaveLength(steps.length);
  delays.forEach((d, i) => {
    expect(d).toBeGreaterThanOrEqual(Math.floor(steps[i]! * (1 - fraction)));
    expect(d).toBeLessThanOrEqual(Math.ceil(steps[i]! * (1 + fraction)));
  });
  expect(delays).not.toEqual(steps);
}
