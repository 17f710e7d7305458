import { describe, expect, it } from 'vitest';
import { FreshRead } from '../../../src/shared/fresh-read.js';

/** A read whose end the test decides, counting how many started. */
function gatedReads() {
  const gates: (() => void)[] = [];
  let started = 0;
  const read = new FreshRead(async () => {
    const n = ++started;
    await new Promise<void>((resolve) => gates.push(resolve));
    return n;
  });
  return { read, gates, started: () => started };
}

describe('FreshRead', () => {
  it('a caller arriving while a read runs gets the next read, never the one under way', async () => {
    const { read, gates, started } = gatedReads();
    const first = read.get();
    const second = read.get();
    expect(started()).toBe(1);
    gates[0]!();
    expect(await first).toBe(1);
    await Promise.resolve();
    await new Promise((r) => setImmediate(r));
    expect(started()).toBe(2);
    gates[1]!();
    expect(await second).toBe(2);
  });

  it('callers arriving during one read share the next one: at most one read runs, at most one waits', async () => {
    const { read, gates, started } = gatedReads();
    const first = read.get();
    const waiting = [read.get(), read.get(), read.get()];
    gates[0]!();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(started()).toBe(2);
    gates[1]!();
    expect(await Promise.all(waiting)).toEqual([2, 2, 2]);
  });

  it('a failed read fails its callers; the next caller starts a new read', async () => {
    let calls = 0;
    const read = new FreshRead(async () => {
      calls += 1;
      if (calls === 1) throw new Error('store unreachable');
      return calls;
    });
    await expect(read.get()).rejects.toThrow('store unreachable');
    expect(await read.get()).toBe(2);
  });
});
