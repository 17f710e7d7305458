/**
 * Objects of a large batch are cached as slices of one string (src/plugin-server/ingest/batch-text.ts); the memory
 * store must not let a few long-lived slices keep a whole batch's text alive (cache/shared-text.ts). Measured on the
 * real V8 heap: a batch's text lives in the large-object space, so that space's size says whether it was freed.
 */
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import type { StoreChange, StoreOp } from '../../../src/plugin-server/cache/store.js';
import { batchText, SHARED_TEXT_MIN_BYTES } from '../../../src/plugin-server/ingest/batch-text.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function largeObjectBytes(): number {
  gc();
  gc();
  return getHeapSpaceStatistics().find((s) => s.space_name === 'large_object_space')!.space_used_size;
}

const PER_BATCH = 160;
const MB = 1024 * 1024;

function objectText(account: string, name: string, rv: number, fill: string): string {
  return JSON.stringify({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'default', resourceVersion: String(rv) },
    data: { fill: fill.repeat(1000), account },
  });
}

/**
 * One received batch as the session sees it: the objects are views into one message buffer, with framing bytes
 * between them (as protobuf puts there), cut by batchText into slices of one string.
 */
function receivedBatch(objects: { account: string; name: string; rv: number }[], fill = 'x'): StoreChange[] {
  const texts = objects.map((o) => objectText(o.account, o.name, o.rv, fill));
  const message = Buffer.from(texts.map((t) => `\n\u0001${t}`).join(''), 'latin1');
  const views: Uint8Array[] = [];
  let at = 0;
  for (const t of texts) {
    at += 2;
    views.push(message.subarray(at, at + t.length));
    at += t.length;
  }
  const text = batchText(views);
  if (!text) throw new Error('batch too small to be shared');
  return objects.map((o, i) => {
    const json = text.textOf(views[i]!);
    if (json === undefined) throw new Error('not sliced');
    return {
      type: 'ADDED',
      account: o.account,
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'default',
      name: o.name,
      uid: `uid-${o.name}`,
      resourceVersion: String(o.rv),
      json,
      text: text.shared,
    };
  });
}

const ops = (changes: StoreChange[]): StoreOp[] => changes.map((change) => ({ op: 'change', change }));
const names = (b: number) => Array.from({ length: PER_BATCH }, (_, i) => `b${b}-cm-${i}`);

/** Each object's own string, as a small batch (a watch's trickle) would bring it. */
function ownChange(account: string, name: string, rv: number): StoreChange {
  return {
    type: 'MODIFIED',
    account,
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace: 'default',
    name,
    uid: `uid-${name}`,
    resourceVersion: String(rv),
    json: objectText(account, name, rv, 'y'),
  };
}

async function applyRelist(store: MemoryCacheStore, r: number): Promise<void> {
  const relist = receivedBatch(
    names(0).map((name, i) => ({ account: 'dev', name, rv: i === 0 ? 100 + r : 10 })),
    String.fromCharCode(97 + r),
  );
  await store.apply(ops(relist));
}

describe('cached slices of a batch text', () => {
  it('hold the batch text while most of its objects are cached, and free it once most are replaced', async () => {
    const store = new MemoryCacheStore();
    const before = largeObjectBytes();
    const batches = 30;
    for (let b = 0; b < batches; b++) {
      const changes = receivedBatch(names(b).map((name) => ({ account: 'dev', name, rv: 10 })));
      expect(changes[0]!.json.length * PER_BATCH).toBeGreaterThan(SHARED_TEXT_MIN_BYTES);
      await store.apply(ops(changes));
    }
    // The sync's texts are alive (about 30 × 160 KB): this is what the test can see disappear.
    const synced = largeObjectBytes() - before;
    expect(synced).toBeGreaterThan(4 * MB);

    // Every object but the first of each batch is modified by a watch, one string each.
    for (let b = 0; b < batches; b++) {
      await store.apply(
        ops(
          names(b)
            .slice(1)
            .map((name) => ownChange('dev', name, 20)),
        ),
      );
    }
    expect(largeObjectBytes() - before).toBeLessThan(synced / 10);
    // The survivors read as they were stored.
    const first = await store.get({
      account: 'dev',
      group: '',
      kind: 'ConfigMap',
      namespace: 'default',
      name: 'b0-cm-0',
    });
    expect(first?.json).toBe(objectText('dev', 'b0-cm-0', 10, 'x'));
    const later = await store.get({
      account: 'dev',
      group: '',
      kind: 'ConfigMap',
      namespace: 'default',
      name: 'b0-cm-9',
    });
    expect(later?.json).toBe(objectText('dev', 'b0-cm-9', 20, 'y'));
  });

  it('do not keep a relisted batch alive for the few objects that changed', async () => {
    const store = new MemoryCacheStore();
    await store.apply(ops(receivedBatch(names(0).map((name) => ({ account: 'dev', name, rv: 10 })))));
    const before = largeObjectBytes();
    // A relist sends every object again, in batches of its own; all but one are unchanged (skipped as not newer).
    // (Applied from a function of its own: a suspended async frame would keep its last batch reachable.)
    for (let r = 0; r < 20; r++) await applyRelist(store, r);
    expect(largeObjectBytes() - before).toBeLessThan(SHARED_TEXT_MIN_BYTES);
    const changed = await store.get({
      account: 'dev',
      group: '',
      kind: 'ConfigMap',
      namespace: 'default',
      name: 'b0-cm-0',
    });
    expect(changed?.resourceVersion).toBe('119');
    expect(changed?.json).toBe(objectText('dev', 'b0-cm-0', 119, 't'));
  });

  it('free a batch shared by two accounts when the larger one is dropped', async () => {
    const store = new MemoryCacheStore();
    const before = largeObjectBytes();
    for (let b = 0; b < 20; b++) {
      const objects = names(b).map((name, i) => ({ account: i < PER_BATCH * 0.8 ? 'big' : 'small', name, rv: 10 }));
      await store.apply(ops(receivedBatch(objects)));
    }
    expect(largeObjectBytes() - before).toBeGreaterThan(2 * MB);
    await store.dropAccount('big');
    expect(largeObjectBytes() - before).toBeLessThan(MB / 2);
    const kept = await store.list({ account: 'small', group: '', kind: 'ConfigMap' });
    expect(kept).toHaveLength(20 * PER_BATCH * 0.2);
    expect(kept.every((o) => o.json === objectText('small', o.name, 10, 'x'))).toBe(true);
  });

  it('free a batch whose objects a resync swept', async () => {
    const store = new MemoryCacheStore();
    const scope = { account: 'dev', group: '', kind: 'ConfigMap', namespace: '' };
    const before = largeObjectBytes();
    await store.apply([
      { op: 'syncStart', scope, version: 'v1' },
      ...ops(receivedBatch(names(0).map((name) => ({ account: 'dev', name, rv: 10 })))),
      { op: 'syncEnd', scope, version: 'v1', resourceVersion: '10' },
    ]);
    expect(largeObjectBytes() - before).toBeGreaterThan(SHARED_TEXT_MIN_BYTES);
    // The next sync lists only two of the objects again: the rest are swept.
    const kept = names(0)
      .slice(0, 2)
      .map((name) => ownChange('dev', name, 10));
    const stats = await store.apply([
      { op: 'syncStart', scope, version: 'v1' },
      ...ops(kept),
      { op: 'syncEnd', scope, version: 'v1', resourceVersion: '10' },
    ]);
    expect(stats.swept).toBe(PER_BATCH - 2);
    expect(largeObjectBytes() - before).toBeLessThan(SHARED_TEXT_MIN_BYTES);
  });
});
