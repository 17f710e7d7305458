import { describe, expect, it } from 'vitest';
import { ownResultBytes } from '../../../src/agent/operations.js';
import { OnceByOperationId } from '../../../src/agent/ops/once.js';
import type { OperationResult } from '../../../src/shared/proto.js';

function result(id: string, json: string): OperationResult {
  // Buffer.from(string) is what the agent's executor does: a small result is a slice of a shared pool slab.
  return { operationId: id, ok: true, error: '', resultJson: Buffer.from(json), resourceVersions: {} };
}

describe('OnceByOperationId', () => {
  it('runs an id once; a repeat gets the first result, even while the first still runs', async () => {
    const once = new OnceByOperationId<string>({ succeeded: (r) => r !== 'failed' });
    let runs = 0;
    let release!: (v: string) => void;
    const first = once.run('task.0', () => {
      runs += 1;
      return new Promise<string>((r) => (release = r));
    });
    const repeat = once.run('task.0', async () => {
      runs += 1;
      return 'second';
    });
    expect(first.repeated).toBe(false);
    expect(repeat.repeated).toBe(true);
    release('first');
    expect(await repeat.result).toBe('first');
    expect(await once.run('task.0', async () => 'third').result).toBe('first');
    expect(runs).toBe(1);
    expect(await once.run('task.1', async () => 'other').result).toBe('other');
  });

  it('a run that failed is forgotten when it ends: the repeat runs again', async () => {
    const once = new OnceByOperationId<string>({ succeeded: (r) => r !== 'failed' });
    expect(await once.run('task.0', async () => 'failed').result).toBe('failed');
    const again = once.run('task.0', async () => 'applied');
    expect(again.repeated).toBe(false);
    expect(await again.result).toBe('applied');
    await expect(once.run('task.1', () => Promise.reject(new Error('boom'))).result).rejects.toThrow('boom');
    expect(once.run('task.1', async () => 'ok').repeated).toBe(false);
  });

  it('forgets the oldest ids beyond its capacity', async () => {
    const once = new OnceByOperationId<number>({ succeeded: () => true, capacity: 2 });
    once.run('a', async () => 1);
    once.run('b', async () => 2);
    once.run('c', async () => 3);
    expect(once.size).toBe(2);
    expect(once.run('a', async () => 4).repeated).toBe(false);
    expect(once.run('c', async () => 5).repeated).toBe(true);
  });

  it('keeps results within its byte budget, oldest finished first, never a running one', async () => {
    const once = new OnceByOperationId<Buffer>({ succeeded: () => true, sizeOf: (b) => b.byteLength, maxBytes: 250 });
    let release!: (b: Buffer) => void;
    once.run('running', () => new Promise<Buffer>((r) => (release = r)));
    for (const id of ['a', 'b', 'c']) await once.run(id, async () => Buffer.alloc(100)).result;
    // a (100) + b + c = 300 > 250: a goes; the running one has no size yet and stays.
    expect(once.bytes).toBe(200);
    expect(once.run('a', async () => Buffer.alloc(1)).repeated).toBe(false);
    expect(once.run('running', async () => Buffer.alloc(1)).repeated).toBe(true);
    release(Buffer.alloc(10));
    await new Promise((r) => setImmediate(r));
    expect(once.run('c', async () => Buffer.alloc(1)).repeated).toBe(true);
    // A result larger than the whole budget is not kept: its repeat runs again.
    await once.run('huge', async () => Buffer.alloc(1000)).result;
    expect(once.run('huge', async () => Buffer.alloc(1)).repeated).toBe(false);
    expect(once.bytes).toBeLessThanOrEqual(250);
  });

  it("keeps a result's own bytes, not the pool slab it was cut from, and answers the repeat with the same content", async () => {
    const once = new OnceByOperationId<OperationResult>({ succeeded: (r) => r.ok, retain: ownResultBytes });
    const first = result('task.0', '{"result":{"manifests":[]}}');
    expect(first.resultJson.buffer.byteLength).toBeGreaterThan(first.resultJson.byteLength);
    expect(await once.run('task.0', async () => first).result).toBe(first);
    const repeat = once.run('task.0', async () => result('task.0', 'second run'));
    expect(repeat.repeated).toBe(true);
    const kept = await repeat.result;
    expect(kept.resultJson.toString()).toBe('{"result":{"manifests":[]}}');
    expect(kept.resultJson.buffer.byteLength).toBe(kept.resultJson.byteLength);
    expect(kept.operationId).toBe('task.0');
    expect(kept.ok).toBe(true);
  });
});
