import { afterEach, describe, expect, it } from 'vitest';
import { CheckBatchBuilder, checkBatch } from '../../../src/plugin-server/ingest/check-batch.js';
import { CheckPool } from '../../../src/plugin-server/ingest/check-pool.js';
import { DEFAULT_INDEX_OPTIONS } from '../../../src/plugin-server/cache/store.js';
import { APPLICATION_INDEX } from '../../../src/plugin-server/views/app-index.js';

/** The views' indexes, as the server registers them (server.ts). */
const INDEXES = [APPLICATION_INDEX];

const pools: CheckPool[] = [];
afterEach(async () => {
  for (const p of pools.splice(0)) await p.close();
});

function batch(texts: (string | undefined)[]) {
  const b = new CheckBatchBuilder(texts);
  for (const t of texts) {
    b.add(t === undefined ? undefined : Buffer.from(t), '', 'v1', 'ConfigMap', t === undefined, DEFAULT_INDEX_OPTIONS);
  }
  return b.build();
}

const pod = (uid: string) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', ownerReferences: [{ uid, controller: true }] },
  });

describe('check batches', () => {
  it('point at the first object that does not parse, after checking the ones before it', () => {
    const r = checkBatch(batch(['{"metadata":{}}', undefined, '{"a": }', '[1]']), INDEXES);
    expect(r.failed).toEqual({ index: 2, error: 'object_json is not valid JSON' });
    expect(checkBatch(batch(['{}', '[1]']), INDEXES).failed).toEqual({
      index: 1,
      error: 'object_json must be a JSON object',
    });
  });

  it('send back only what differs from the text as sent: index keys, a Secret without its data', () => {
    const b = new CheckBatchBuilder({ length: 3 });
    b.add(Buffer.from(pod('owner-1')), '', 'v1', 'Pod', false, DEFAULT_INDEX_OPTIONS);
    b.add(Buffer.from('{"metadata":{"name":"plain"}}'), '', 'v1', 'ConfigMap', false, DEFAULT_INDEX_OPTIONS);
    const secret = JSON.stringify({ metadata: { name: 's' }, data: { k: 'c2VjcmV0' }, stringData: { k: 'secret' } });
    b.add(Buffer.from(secret), '', 'v1', 'Secret', false, DEFAULT_INDEX_OPTIONS);
    const r = checkBatch(b.build(), INDEXES);
    expect(r.failed).toBeUndefined();
    expect(r.results[0]).toEqual({ index: { owner: 'owner-1' } });
    expect(r.results[1]).toBeUndefined();
    expect(r.results[2]).toMatchObject({ json: '{"metadata":{"name":"s"}}' });
  });
});

describe('the check pool', () => {
  it('starts its threads when warmed, before any batch, and checks on them', async () => {
    const pool = new CheckPool(2, INDEXES);
    pools.push(pool);
    expect(pool.threads).toBe(0);
    pool.warm();
    expect(pool.threads).toBe(2);
    pool.warm();
    expect(pool.threads).toBe(2);
    const texts = [pod('u-1'), pod('u-2')];
    expect(await pool.check(batch(texts))).toEqual(checkBatch(batch(texts), INDEXES));
    expect(pool.threads).toBe(2);
  });

  it('answers each batch on a thread, the same as checking it inline', async () => {
    const pool = new CheckPool(2, INDEXES);
    pools.push(pool);
    const texts = Array.from({ length: 200 }, (_, i) => (i === 150 ? '{' : pod(`u-${i}`)));
    const [a, b] = await Promise.all([pool.check(batch(texts)), pool.check(batch(texts.slice(0, 100)))]);
    expect(a).toEqual(checkBatch(batch(texts), INDEXES));
    expect(a.failed?.index).toBe(150);
    expect(b.failed).toBeUndefined();
    expect(b.results.map((x) => (x && 'index' in x ? x.index.owner : ''))).toEqual(
      texts.slice(0, 100).map((_, i) => `u-${i}`),
    );
  });

  it('fails the batches a dying thread held, and replaces the thread', async () => {
    const pool = new CheckPool(1, INDEXES);
    pools.push(pool);
    const held = pool.check(batch(Array.from({ length: 5_000 }, (_, i) => pod(`u-${i}`))));
    // As an out-of-memory kill or a crash would: the thread goes away with the batch unanswered.
    await (pool as unknown as { slots: { worker: { terminate(): Promise<number> } }[] }).slots[0]!.worker.terminate();
    await expect(held).rejects.toThrow(/object check worker exited/);
    const after = await pool.check(batch([pod('u-after')]));
    expect(after.results[0]).toEqual({ index: { owner: 'u-after' } });
  });
});
