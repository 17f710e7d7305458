import { describe, expect, it } from 'vitest';
import type { WatchScope } from '../../../src/agent/reflector.js';
import { SendQueue, type QueueTransport } from '../../../src/agent/send-queue.js';
import { ChangeType, type AgentMessage, type Change } from '../../../src/shared/proto.js';

const scope: WatchScope = {
  account: 'dev',
  resource: { group: 'apps', version: 'v1', kind: 'Deployment', resource: 'deployments', namespaced: true },
  namespace: '',
};

function change(name: string, bytes = 100): Change {
  return {
    type: ChangeType.CHANGE_TYPE_ADDED,
    account: 'dev',
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    namespace: 'ns',
    name,
    uid: name,
    resourceVersion: '1',
    objectJson: Buffer.alloc(bytes, 0x20),
  };
}

class Collect implements QueueTransport {
  sent: AgentMessage[] = [];
  full = false;
  private drain: (() => void) | undefined;
  write(m: AgentMessage): boolean {
    this.sent.push(m);
    return !this.full;
  }
  onDrain(fn: () => void): void {
    this.drain = fn;
  }
  release(): void {
    this.full = false;
    this.drain?.();
  }
  seqs(): number[] {
    return this.sent.map((m) => (m.changeBatch ?? m.syncStart ?? m.syncEnd ?? m.bookmark)?.seq ?? -1);
  }
}

const options = { maxBytes: 64 * 1024, maxBatchBytes: 8 * 1024, maxInFlightBatches: 1 };

describe('SendQueue', () => {
  it('sends at once when idle and batches only while a send is in flight', () => {
    const q = new SendQueue(options);
    const t = new Collect();
    q.attach(t);
    q.change(scope, change('a'));
    expect(t.sent).toHaveLength(1);
    expect(t.sent[0]?.changeBatch?.changes.map((c) => c.name)).toEqual(['a']);
    expect(t.sent[0]?.changeBatch?.observedAtMs).toBeGreaterThan(0);
    q.change(scope, change('b'));
    q.change(scope, change('c'));
    expect(t.sent).toHaveLength(1);
    q.ack(1);
    expect(t.sent).toHaveLength(2);
    expect(t.sent[1]?.changeBatch?.changes.map((c) => c.name)).toEqual(['b', 'c']);
    q.ack(2);
    expect(q.idle).toBe(true);
  });

  it('numbers data messages 1, 2, 3 and keeps SyncStart/changes/SyncEnd in order', () => {
    const q = new SendQueue({ ...options, maxInFlightBatches: 1 });
    const t = new Collect();
    q.attach(t);
    q.bookmark(scope, '5');
    q.syncStart(scope);
    q.change(scope, change('a'));
    q.change(scope, change('b'));
    q.syncEnd(scope, '9');
    q.ack(1);
    expect(t.sent.map((m) => Object.keys(m).find((k) => m[k as keyof AgentMessage]))).toEqual([
      'bookmark',
      'syncStart',
      'changeBatch',
      'syncEnd',
    ]);
    expect(t.seqs()).toEqual([1, 2, 3, 4]);
    expect(t.sent[3]?.syncEnd).toMatchObject({
      account: 'dev',
      namespace: '',
      resourceVersion: '9',
      kind: { group: 'apps', kind: 'Deployment' },
    });
  });

  it('caps a batch at maxBatchBytes (a single bigger object still goes alone)', () => {
    const q = new SendQueue({ ...options, maxBatchBytes: 1000 });
    const t = new Collect();
    q.attach(t);
    q.change(scope, change('first'));
    for (let i = 0; i < 5; i++) q.change(scope, change(`s${i}`, 400));
    q.change(scope, change('huge', 5000));
    const sizes: number[] = [];
    for (let seq = 1; t.sent.length > sizes.length; seq++) {
      sizes.push(t.sent[sizes.length]?.changeBatch?.changes.length ?? 0);
      q.ack(seq);
    }
    expect(sizes).toEqual([1, 2, 2, 1, 1]);
  });

  it('has no room when queued + unacked bytes reach maxBytes, and wakes producers on ack', async () => {
    const q = new SendQueue({ maxBytes: 70 * 1024, maxBatchBytes: 16 * 1024, maxInFlightBatches: 2 });
    const t = new Collect();
    q.attach(t);
    for (let i = 0; i < 10; i++) q.change(scope, change(`c${i}`, 10 * 1024));
    expect(q.hasRoom()).toBe(false);
    let woke = false;
    const waiting = q.waitForRoom(new AbortController().signal).then(() => {
      woke = true;
    });
    await Promise.resolve();
    expect(woke).toBe(false);
    q.ack(t.seqs().at(-1) ?? 0);
    // Acking two flights lets two more go out: still 82 KiB queued + unacked, so producers keep waiting.
    await Promise.resolve();
    expect(woke).toBe(false);
    q.ack(t.seqs().at(-1) ?? 0);
    await waiting;
    expect(woke).toBe(true);
    expect(q.hasRoom()).toBe(true);
  });

  it('stops writing while the transport is full and resumes on drain', () => {
    const q = new SendQueue({ ...options, maxInFlightBatches: 8 });
    const t = new Collect();
    q.attach(t);
    t.full = true;
    q.change(scope, change('a'));
    q.change(scope, change('b'));
    expect(t.sent).toHaveLength(1);
    t.release();
    expect(t.sent).toHaveLength(2);
  });

  it('respects the server window and message size from Welcome', () => {
    const q = new SendQueue({ maxBytes: 1024 * 1024, maxBatchBytes: 1024 * 1024, maxInFlightBatches: 8 });
    const t = new Collect();
    q.attach(t, { window: 3000, maxMessageBytes: 70 * 1024 });
    for (let i = 0; i < 4; i++) q.change(scope, change(`c${i}`, 1000));
    // 1096 bytes per change: the window admits three single-change flights, the fourth waits for an ack.
    expect(t.sent).toHaveLength(3);
    q.ack(1);
    expect(t.sent).toHaveLength(4);
  });

  it('drops everything on detach and restarts numbering on the next stream', () => {
    const q = new SendQueue(options);
    const t1 = new Collect();
    q.attach(t1);
    q.change(scope, change('a'));
    q.change(scope, change('b'));
    q.detach();
    expect(q.stats()).toMatchObject({ pendingItems: 0, pendingBytes: 0, unackedBytes: 0 });
    q.change(scope, change('dropped-while-detached'));
    const t2 = new Collect();
    q.attach(t2);
    q.change(scope, change('c'));
    expect(t2.seqs()).toEqual([1]);
    expect(t2.sent[0]?.changeBatch?.changes.map((c) => c.name)).toEqual(['c']);
  });
});
