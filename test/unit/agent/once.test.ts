import { describe, expect, it } from 'vitest';
import { OnceByOperationId } from '../../../src/agent/ops/once.js';

describe('OnceByOperationId', () => {
  it('runs an id once; a repeat gets the first result, even while the first still runs', async () => {
    const once = new OnceByOperationId<string>((r) => r !== 'failed');
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
    const once = new OnceByOperationId<string>((r) => r !== 'failed');
    expect(await once.run('task.0', async () => 'failed').result).toBe('failed');
    const again = once.run('task.0', async () => 'applied');
    expect(again.repeated).toBe(false);
    expect(await again.result).toBe('applied');
    await expect(once.run('task.1', () => Promise.reject(new Error('boom'))).result).rejects.toThrow('boom');
    expect(once.run('task.1', async () => 'ok').repeated).toBe(false);
  });

  it('forgets the oldest ids beyond its capacity', async () => {
    const once = new OnceByOperationId<number>(() => true, 2);
    once.run('a', async () => 1);
    once.run('b', async () => 2);
    once.run('c', async () => 3);
    expect(once.size).toBe(2);
    expect(once.run('a', async () => 4).repeated).toBe(false);
    expect(once.run('c', async () => 5).repeated).toBe(true);
  });
});
