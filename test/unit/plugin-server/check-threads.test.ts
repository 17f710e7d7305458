/**
 * Large batches are checked on a check thread (src/plugin-server/ingest/check-pool.ts), small ones on the event loop.
 * The two must not differ in anything an agent or a reader can see: what is stored (a Secret's data removed), the
 * index keys the views read, the error that refuses a batch, and the order of writes and acknowledgements.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import type { Change } from '../../../src/shared/proto.js';
import { SHARED_TEXT_MIN_BYTES } from '../../../src/plugin-server/ingest/batch-text.js';
import { account, change, configMap, getJson, startServer, TestAgent } from './helpers.js';

const servers: PluginServer[] = [];
const agents: TestAgent[] = [];
afterEach(async () => {
  for (const a of agents.splice(0)) a.close();
  for (const s of servers.splice(0)) await s.stop();
});

async function serverWith(checkThreads: number) {
  const s = await startServer(`limits: {checkThreads: ${checkThreads}}`);
  servers.push(s.server);
  const agent = new TestAgent(s.address);
  agents.push(agent);
  await agent.hello([account('dev')]);
  return { ...s, agent };
}

const monikered = (cluster: string) => ({
  'moniker.spinnaker.io/application': 'shop',
  'moniker.spinnaker.io/cluster': cluster,
});

/** 100 changes (large enough for a check thread): a server group, its Pods, a Secret with data, ConfigMaps, a delete. */
function mixedBatch(): Change[] {
  const rsUid = 'rs-uid-1';
  const out: Change[] = [
    change('dev', 'ADDED', {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'web-v001', namespace: 'shop', resourceVersion: '5', annotations: monikered('replicaSet web') },
      spec: { replicas: 3 },
      status: { replicas: 3, readyReplicas: 3, availableReplicas: 3 },
    } as never),
  ];
  out[0]!.uid = rsUid;
  for (let i = 0; i < 3; i++) {
    out.push(
      change('dev', 'ADDED', {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: `web-v001-${i}`,
          namespace: 'shop',
          resourceVersion: String(10 + i),
          annotations: monikered('replicaSet web'),
          ownerReferences: [
            { apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-v001', uid: rsUid, controller: true },
          ],
        },
        status: { phase: 'Running' },
      } as never),
    );
  }
  out.push(secretChange('shop', '20', 'CANARY-77'));
  for (let i = 0; out.length < 99; i++)
    out.push(change('dev', 'ADDED', configMap(`cm-${i}`, String(100 + i), { i: `${i}` })));
  out.push({ ...change('dev', 'DELETED', configMap('gone', '300')), objectJson: Buffer.alloc(0) });
  return out;
}

/** A Secret named tls whose data holds `canary`: what the store must never keep. */
function secretChange(namespace: string, resourceVersion: string, canary: string): Change {
  return change('dev', 'ADDED', {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'tls', namespace, resourceVersion },
    data: { key: Buffer.from(canary).toString('base64') },
  } as never);
}

/** 181 changes over 128 KiB (cut from one shared text): 1 KB ConfigMaps, every fifth with non-ASCII text, a Secret. */
function largeBatch(): Change[] {
  // UTF-8 of two, three and four bytes.
  const words = ['grüße', '日本語', '🚀 launch', 'plain'];
  const changes: Change[] = [];
  for (let i = 0; i < 180; i++) {
    const text = i % 5 === 0 ? words[i % 4]!.repeat(60) : `value-${i}-`.repeat(80);
    changes.push(change('dev', 'ADDED', configMap(`cm-${i}`, String(100 + i), { text })));
  }
  changes.splice(75, 0, secretChange('default', '99', 'CANARY-88'));
  return changes;
}

/** Sends `changes` as one batch and expects it refused naming change `index`, with nothing of it stored. */
async function expectRefusedAt(agent: TestAgent, base: string, changes: Change[], index: number): Promise<void> {
  agent.send({ changeBatch: { seq: 1, observedAtMs: 0, changes } });
  expect(await agent.ended).toMatchObject({
    code: GrpcStatus.INVALID_ARGUMENT,
    details: expect.stringMatching(
      new RegExp(`change ${index} \\(ConfigMap default/cm-\\d+\\): object_json is not valid JSON`),
    ),
  });
  expect((await getJson(`${base}/manifests/dev/default/configMap%20cm-0`)).status).toBe(404);
}

describe('objects checked on a check thread', () => {
  it('store and index a large batch exactly as the event loop does', async () => {
    const inline = await serverWith(0);
    const threaded = await serverWith(1);
    for (const s of [inline, threaded]) await s.agent.batch(mixedBatch());

    const read = async (base: string) => ({
      groups: (await getJson(`${base}/applications/shop/serverGroups`)).body,
      secret: (await getJson(`${base}/manifests/dev/shop/secret%20tls`)).body,
      cm: (await getJson(`${base}/manifests/dev/default/configMap%20cm-42`)).body,
    });
    const a = await read(inline.base);
    const b = await read(threaded.base);
    // The views found the server group and its Pods through the index keys the thread computed.
    expect(b.groups).toEqual([
      expect.objectContaining({ name: 'replicaSet web-v001', instanceCounts: expect.objectContaining({ total: 3 }) }),
    ]);
    expect(JSON.stringify(b.secret)).not.toContain(Buffer.from('CANARY-77').toString('base64'));
    expect(b.secret).toMatchObject({ manifest: { metadata: { name: 'tls' } } });
    expect(b.cm).toMatchObject({ manifest: { data: { i: '42' } } });
    expect(b).toEqual(a);
    // And the work was done where each server says: 100 objects on the thread, 100 on the event loop.
    const checked = async (base: string) =>
      (await (await fetch(`${base}/metrics`)).text())
        .split('\n')
        .filter((l) => l.startsWith('scale_agent_plugin_server_objects_checked_total{'));
    expect(await checked(threaded.base)).toEqual(['scale_agent_plugin_server_objects_checked_total{on="thread"} 100']);
    expect(await checked(inline.base)).toEqual([
      'scale_agent_plugin_server_objects_checked_total{on="event_loop"} 100',
    ]);
  });

  it('refuse a large batch with one object that is not JSON, naming it, and store nothing of it', async () => {
    const { agent, base } = await serverWith(1);
    const changes = mixedBatch();
    changes[70] = { ...changes[70]!, objectJson: Buffer.from('{"a": }') };
    await expectRefusedAt(agent, base, changes, 70);
  });

  it('write and acknowledge in stream order: a small batch behind a large one waits for it', async () => {
    const { agent, base } = await serverWith(1);
    const large = mixedBatch();
    // Sent back to back: the small batch needs no thread and is ready first.
    agent.send({ changeBatch: { seq: 1, observedAtMs: 0, changes: large } });
    agent.seq = 1;
    const seq2 = await agent.batch([change('dev', 'MODIFIED', configMap('cm-0', '500', { i: 'later' }))]);
    expect(seq2).toBe(2);
    // Acknowledging seq 2 says seq 1 is applied: every object of the large batch is readable now, not eventually.
    const cms = large.filter((c) => c.kind === 'ConfigMap' && c.objectJson.length > 0);
    const found = await Promise.all(
      cms.map(async (c) => (await getJson(`${base}/manifests/dev/default/configMap%20${c.name}`)).status),
    );
    expect(found.filter((s) => s !== 200)).toEqual([]);
    expect((await getJson(`${base}/manifests/dev/default/configMap%20cm-0`)).body).toMatchObject({
      manifest: { data: { i: 'later' } },
    });
    const acks = agent.received.flatMap((m) => (m.ack ? [m.ack.seq] : []));
    expect(acks).toEqual([...acks].sort((x, y) => x - y));
  });

  it('store a batch large enough to share one text exactly as small batches: non-ASCII objects, a Secret', async () => {
    const changes = largeBatch();
    expect(changes.reduce((n, c) => n + c.objectJson.length, 0)).toBeGreaterThan(SHARED_TEXT_MIN_BYTES);

    const small = await serverWith(0);
    for (let i = 0; i < changes.length; i += 20) await small.agent.batch(changes.slice(i, i + 20));
    const inline = await serverWith(0);
    await inline.agent.batch(changes);
    const threaded = await serverWith(1);
    await threaded.agent.batch(changes);

    const read = async (base: string) =>
      Promise.all([
        ...changes
          .filter((c) => c.kind === 'ConfigMap')
          .map(async (c) => (await getJson(`${base}/manifests/dev/default/configMap%20${c.name}`)).body),
        (await getJson(`${base}/manifests/dev/default/secret%20tls`)).body,
      ]);
    const expected = await read(small.base);
    expect(expected[0]).toMatchObject({ manifest: { data: { text: 'grüße'.repeat(60) } } });
    expect(expected[10]).toMatchObject({ manifest: { data: { text: '🚀 launch'.repeat(60) } } });
    expect(JSON.stringify(expected.at(-1))).not.toContain(Buffer.from('CANARY-88').toString('base64'));
    expect(await read(inline.base)).toEqual(expected);
    expect(await read(threaded.base)).toEqual(expected);
  });

  it('refuse a batch cut from one shared text when one object is not JSON, naming it, and store nothing', async () => {
    for (const threads of [0, 1]) {
      const { agent, base } = await serverWith(threads);
      const changes = largeBatch();
      changes[120] = { ...changes[120]!, objectJson: Buffer.from('{"data": {"text": "x"} ') };
      await expectRefusedAt(agent, base, changes, 120);
    }
  });
});
