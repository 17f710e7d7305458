import { describe, expect, it } from 'vitest';
import { SyncBudget } from '../../../src/agent/sync-budget.js';

describe('SyncBudget', () => {
  it('grants up to the limit, queues the rest in order, and hands a released slot on', async () => {
    const budget = new SyncBudget(2);
    const signal = new AbortController().signal;
    const a = await budget.acquire(signal);
    const b = await budget.acquire(signal);
    const order: string[] = [];
    const c = budget.acquire(signal).then((r) => (order.push('c'), r));
    const d = budget.acquire(signal).then((r) => (order.push('d'), r));
    await Promise.resolve();
    expect([budget.inUse, budget.queued, order]).toEqual([2, 2, []]);
    a();
    a(); // releasing twice frees one slot only
    (await c)();
    b();
    await d;
    expect(order).toEqual(['c', 'd']);
    expect(budget.inUse).toBe(1);
  });

  it('an aborted wait leaves the queue and holds no slot; a higher limit admits waiters', async () => {
    const budget = new SyncBudget(1);
    await budget.acquire(new AbortController().signal);
    const ac = new AbortController();
    const aborted = budget.acquire(ac.signal);
    const waiting = budget.acquire(new AbortController().signal);
    ac.abort();
    (await aborted)();
    expect([budget.inUse, budget.queued]).toEqual([1, 1]);
    budget.setLimit(2);
    await waiting;
    expect(budget.inUse).toBe(2);
  });

  it('exhausted: a lowered limit takes effect as slots are released, not by revoking them', async () => {
    const budget = new SyncBudget(3);
    const signal = new AbortController().signal;
    const held = [await budget.acquire(signal), await budget.acquire(signal), await budget.acquire(signal)];
    budget.setLimit(1);
    let admitted = false;
    const waiting = budget.acquire(signal).then((r) => ((admitted = true), r));
    held[0]!();
    await Promise.resolve();
    // 2 in use, limit 1: still no room.
    expect([budget.inUse, budget.queued, admitted]).toEqual([2, 1, false]);
    held[1]!();
    await Promise.resolve();
    expect([budget.inUse, budget.queued, admitted]).toEqual([1, 1, false]);
    held[2]!();
    (await waiting)();
    expect([budget.inUse, budget.queued, admitted]).toEqual([0, 0, true]);
  });

  it('reports busy when the first slot is taken and idle when the last is released with nobody waiting', async () => {
    const events: string[] = [];
    const budget = new SyncBudget(1, { onBusy: () => events.push('busy'), onIdle: () => events.push('idle') });
    const signal = new AbortController().signal;
    const a = await budget.acquire(signal);
    const b = budget.acquire(signal);
    a(); // handed on to the waiter: still busy, not idle
    expect(events).toEqual(['busy']);
    (await b)();
    expect(events).toEqual(['busy', 'idle']);
    (await budget.acquire(signal))();
    expect(events).toEqual(['busy', 'idle', 'busy', 'idle']);
  });
});
