import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../../src/agent/kube/client.js';
import type { ApiResource } from '../../../src/agent/kube/resources.js';
import { Reflector } from '../../../src/agent/reflector.js';
import { createNamespace, kubectl, testEnv } from '../../infra/index.js';
import { CONFIGMAPS, logger, RecordingSink, waitFor } from './_helpers.js';

const SECRETS: ApiResource = { group: '', version: 'v1', kind: 'Secret', resource: 'secrets', namespaced: true };

let client: KubeClient;
const reflectors: Reflector[] = [];

beforeAll(async () => {
  client = await KubeClient.create({ kubeconfigFile: testEnv().kubeconfig });
});
afterAll(async () => {
  await Promise.all(reflectors.map((r) => r.stop()));
  client.close();
});

function startReflector(
  resource: ApiResource,
  namespace: string,
  sink: RecordingSink,
  streamingLists: boolean,
): Reflector {
  const r = new Reflector({
    client,
    scope: { account: 'test', resource, namespace },
    sink,
    logger,
    streamingLists,
    pageSize: 2,
  });
  reflectors.push(r);
  r.start();
  return r;
}

describe.each([
  { mode: 'streaming list', streamingLists: true },
  { mode: 'paginated LIST', streamingLists: false },
])('reflector ($mode)', ({ streamingLists }) => {
  it('lists existing objects between SyncStart and SyncEnd, then sees create, update and delete', async () => {
    const ns = await createNamespace('agent-refl');
    for (const n of ['a', 'b', 'c']) await kubectl(['create', 'configmap', n, '-n', ns, `--from-literal=k=${n}`]);
    const sink = new RecordingSink();
    const r = startReflector(CONFIGMAPS, ns, sink, streamingLists);
    await waitFor('initial sync', () => sink.count('syncEnd') === 1);
    const names = sink.changes().map((c) => `${c.t} ${c.name}`);
    // kube-root-ca.crt is created in every namespace by the controller manager.
    expect(names.filter((n) => n !== 'ADDED kube-root-ca.crt').sort()).toEqual(['ADDED a', 'ADDED b', 'ADDED c']);
    expect(sink.events[0]).toEqual({ t: 'syncStart', kind: 'ConfigMap', namespace: ns });
    expect(sink.events.findIndex((e) => e.t === 'syncEnd')).toBe(sink.events.length - 1);
    expect(r.synced).toBe(true);
    expect(r.state).toBe('watching');

    await kubectl(['create', 'configmap', 'd', '-n', ns, '--from-literal=k=d']);
    await kubectl(['patch', 'configmap', 'a', '-n', ns, '-p', '{"data":{"k":"a2"}}']);
    await kubectl(['delete', 'configmap', 'b', '-n', ns]);
    await waitFor('watch events', () => sink.changes().some((c) => c.t === 'DELETED' && c.name === 'b'));
    const after = sink.changes().slice(-3);
    expect(after.map((c) => `${c.t} ${c.name}`)).toEqual(['ADDED d', 'MODIFIED a', 'DELETED b']);
    const modified = JSON.parse(after[1]?.json ?? '{}') as {
      apiVersion: string;
      kind: string;
      data: { k: string };
      metadata: Record<string, unknown>;
    };
    expect(modified).toMatchObject({ apiVersion: 'v1', kind: 'ConfigMap', data: { k: 'a2' } });
    // managedFields never leave the agent; objects of a list carry apiVersion/kind like watch events do.
    for (const c of sink.changes()) {
      const obj = JSON.parse(c.json) as { apiVersion: string; kind: string; metadata: Record<string, unknown> };
      expect(obj.metadata.managedFields).toBeUndefined();
      expect([obj.apiVersion, obj.kind]).toEqual(['v1', 'ConfigMap']);
    }
    // The watch continues from the newest resourceVersion it saw.
    expect(r.resourceVersion).toBe(after[2]?.rv);
    await r.stop();
    expect(r.state).toBe('stopped');
  });

  it('watches Secrets as metadata only: a canary value never appears in what it emits', async () => {
    const ns = await createNamespace('agent-secret');
    const canary = `canary-${Math.random().toString(36).slice(2)}`;
    const b64 = Buffer.from(canary).toString('base64');
    await kubectl(['create', 'secret', 'generic', 'created', '-n', ns, `--from-literal=password=${canary}`]);
    // kubectl apply copies the whole Secret, data included, into the last-applied-configuration annotation.
    await kubectl(['apply', '-n', ns, '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'applied', labels: { app: 'x' } },
        stringData: { password: canary },
      }),
    });
    const sink = new RecordingSink();
    startReflector(SECRETS, ns, sink, streamingLists);
    await waitFor('initial sync', () => sink.count('syncEnd') === 1);
    await kubectl(['patch', 'secret', 'created', '-n', ns, '-p', JSON.stringify({ stringData: { other: canary } })]);
    await kubectl(['delete', 'secret', 'applied', '-n', ns]);
    await waitFor('delete event', () => sink.changes().some((c) => c.t === 'DELETED' && c.name === 'applied'));
    const names = sink.changes().map((c) => `${c.t} ${c.name}`);
    expect(names).toEqual(
      expect.arrayContaining(['ADDED created', 'ADDED applied', 'MODIFIED created', 'DELETED applied']),
    );
    for (const c of sink.changes()) {
      expect(c.json).not.toContain(canary);
      expect(c.json).not.toContain(b64);
      const obj = JSON.parse(c.json) as Record<string, unknown> & { metadata: Record<string, unknown> };
      expect(Object.keys(obj).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
      expect([obj.apiVersion, obj.kind]).toEqual(['v1', 'Secret']);
    }
    const applied = JSON.parse(sink.changes().find((c) => c.name === 'applied')?.json ?? '{}') as {
      metadata: { labels: unknown };
    };
    expect(applied.metadata.labels).toEqual({ app: 'x' });
  });
});

describe('reflector backpressure', () => {
  it('stops reading its watch while the sink is full and delivers everything in order afterwards', async () => {
    const ns = await createNamespace('agent-bp');
    const sink = new RecordingSink();
    startReflector(CONFIGMAPS, ns, sink, true);
    // The controller manager adds kube-root-ca.crt to a new namespace, on a loaded machine after the list: had it
    // come after the room closed, the reflector would (rightly) stop before reading 'first'.
    await waitFor(
      'initial sync',
      () => sink.count('syncEnd') === 1 && sink.changes().some((c) => c.name === 'kube-root-ca.crt'),
    );
    sink.setRoom(false);
    await kubectl(['create', 'configmap', 'first', '-n', ns]);
    // The reflector parks at the next thing it reads: usually 'first', but a bookmark or the server's end of the
    // watch can come before it (then 'first' waits in the API server with the rest).
    await waitFor('the reflector to wait for room', () => sink.waiting() > 0);
    const before = sink.changes().length;
    for (let i = 0; i < 20; i++) await kubectl(['create', 'configmap', `held-${i}`, '-n', ns]);
    // Nothing more is taken from the stream while there is no room (what arrived in the same chunk excepted).
    expect(sink.changes().length).toBeLessThanOrEqual(before + 1);
    sink.setRoom(true);
    await waitFor('all held events', () => sink.changes().filter((c) => c.name.startsWith('held-')).length === 20);
    const held = sink
      .changes()
      .filter((c) => c.name.startsWith('held-'))
      .map((c) => c.name);
    expect(held).toEqual(Array.from({ length: 20 }, (_, i) => `held-${i}`));
    const order = sink.changes().map((c) => c.name);
    expect(order.filter((n) => n === 'first')).toHaveLength(1);
    expect(order.indexOf('first')).toBeLessThan(order.indexOf('held-0'));
  });
});
