import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { AccountRegistry } from '../../../src/plugin-server/accounts.js';
import { DEFAULT_INDEX_OPTIONS } from '../../../src/plugin-server/cache/store.js';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import type { StoreOp } from '../../../src/plugin-server/cache/store.js';
import { IngestPipeline } from '../../../src/plugin-server/ingest/pipeline.js';
import { ProtocolError } from '../../../src/plugin-server/ingest/wire.js';
import { PluginServerMetrics } from '../../../src/plugin-server/metrics.js';
import { change, configMap } from './helpers.js';

/** A real memory store and metrics; the stream's side (flow control, acks, close) is recorded. */
function pipeline(options: { maxUnackedBytes?: number; held?: string[] } = {}) {
  const store = new MemoryCacheStore();
  const metrics = new PluginServerMetrics({
    store,
    accounts: new AccountRegistry(store, pino({ level: 'silent' }), { gracePeriodMs: 1000 }),
  });
  const writes: StoreOp[][] = [];
  store.onApplied((ops) => writes.push([...ops]));
  const events: string[] = [];
  const failures: unknown[] = [];
  const held = new Set(options.held ?? ['dev']);
  const ingest = new IngestPipeline({
    store,
    metrics,
    limits: { maxUnackedBytes: options.maxUnackedBytes ?? 1 << 20, maxChangesPerBatch: 1000 },
    sessionId: 's1',
    holds: (account) => held.has(account),
    indexOptions: () => DEFAULT_INDEX_OPTIONS,
    pause: () => events.push('pause'),
    resume: () => events.push('resume'),
    ack: (seq) => events.push(`ack ${seq}`),
    failed: (e) => failures.push(e),
  });
  /** A control step that holds the queue until released: writes queued behind it are in flight together. */
  const hold = () => {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    ingest.control(() => released);
    return release;
  };
  const batch = (seq: number, ...names: string[]) => ({
    seq,
    observedAtMs: 0,
    changes: names.map((n) => change(n.split('/')[0]!, 'ADDED', configMap(n.split('/')[1]!, String(seq)))),
  });
  const settled = () => new Promise((r) => setTimeout(r, 5));
  return { store, metrics, ingest, writes, events, failures, held, hold, batch, settled };
}

const names = (ops: StoreOp[]) => ops.map((o) => (o.op === 'change' ? o.change.name : o.op));

describe('one stream’s ingest pipeline (ingest/pipeline.ts)', () => {
  it('writes messages in order, those queued during a write as one store write, and acks cumulatively', async () => {
    const p = pipeline();
    const release = p.hold();
    p.ingest.changes(p.batch(1, 'dev/a'));
    p.ingest.scoped({
      syncStart: {
        seq: 2,
        account: 'dev',
        kind: { group: '', version: 'v1', kind: 'ConfigMap', resource: '', namespaced: true },
        namespace: '',
      },
    });
    p.ingest.changes(p.batch(3, 'dev/b', 'dev/c'));
    await p.settled();
    expect(p.writes).toEqual([]);
    release();
    await p.settled();
    expect(p.writes.map(names)).toEqual([['a', 'syncStart', 'b', 'c']]);
    expect(p.events).toEqual(['ack 3']);
    expect(p.ingest.ackedSeq).toBe(3);
    expect(p.ingest.pendingBytes).toBe(0);
    expect(await p.store.list({ account: 'dev' })).toHaveLength(3);
  });

  it('runs a control step only after the data queued before it is written', async () => {
    const p = pipeline();
    const release = p.hold();
    p.ingest.changes(p.batch(1, 'dev/a'));
    const seen: number[] = [];
    p.ingest.control(async () => void seen.push((await p.store.list({ account: 'dev' })).length));
    p.ingest.changes(p.batch(2, 'dev/b'));
    release();
    await p.settled();
    expect(seen).toEqual([1]);
    expect(p.events).toEqual(['ack 1', 'ack 2']);
  });

  it('stops reading past the flow-control window and reads again once half of it is acknowledged', async () => {
    const p = pipeline({ maxUnackedBytes: 600 });
    const release = p.hold();
    p.ingest.changes(p.batch(1, 'dev/a'));
    expect(p.events).toEqual([]);
    p.ingest.changes(p.batch(2, 'dev/b'));
    p.ingest.changes(p.batch(3, 'dev/c'));
    expect(p.events).toEqual(['pause']);
    expect(p.ingest.pendingBytes).toBeGreaterThan(600);
    release();
    await p.settled();
    expect(p.events).toEqual(['pause', 'ack 3', 'resume']);
  });

  it('drops what the stream sends for accounts it does not hold, and counts it', async () => {
    const p = pipeline({ held: ['dev'] });
    p.ingest.changes(p.batch(1, 'dev/a', 'prod/b', 'dev/c'));
    await p.settled();
    expect(p.writes.map(names)).toEqual([['a', 'c']]);
    expect(await p.store.list({ account: 'prod' })).toEqual([]);
    const dropped = await p.metrics.droppedChanges.get();
    expect(dropped.values).toEqual([{ labels: { reason: 'account_not_held' }, value: 1 }]);
  });

  it('refuses a malformed message at once, and a failing step stops everything queued after it', async () => {
    const p = pipeline();
    expect(() => p.ingest.changes(p.batch(0, 'dev/a'))).toThrow(ProtocolError);
    const boom = new Error('store down');
    p.ingest.control(() => Promise.reject(boom));
    p.ingest.changes(p.batch(1, 'dev/a'));
    await p.settled();
    expect(p.failures).toEqual([boom]);
    p.ingest.stop();
    p.ingest.changes(p.batch(2, 'dev/b'));
    await p.settled();
    expect(p.writes).toEqual([]);
    expect(p.events).toEqual([]);
  });
});
