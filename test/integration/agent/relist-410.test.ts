import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeClient } from '../../../src/agent/kube/client.js';
import { Reflector, type ReflectorHooks } from '../../../src/agent/reflector.js';
import { ControlPlane, run } from '../../infra/index.js';
import { CONFIGMAPS, logger, RecordingSink, waitFor } from './_helpers.js';

// Destructive: etcd compaction and an API server restart, so a private control plane.

let cp: ControlPlane;
let client: KubeClient;
const reflectors: Reflector[] = [];

const kubectl = (args: string[]) => run(join(cp.binDir, 'kubectl'), ['--kubeconfig', cp.kubeconfig, ...args]);

/** Compacts etcd up to its current revision through the v3 HTTP gateway (etcdctl is not built). */
async function compactEtcd(): Promise<number> {
  const range = await fetch(`${cp.etcdUrl}/v3/kv/range`, {
    method: 'POST',
    body: JSON.stringify({ key: Buffer.from('/').toString('base64') }),
  });
  const revision = Number(((await range.json()) as { header: { revision: string } }).header.revision);
  const res = await fetch(`${cp.etcdUrl}/v3/kv/compaction`, {
    method: 'POST',
    body: JSON.stringify({ revision: String(revision), physical: true }),
  });
  if (!res.ok) throw new Error(`compaction failed: ${res.status} ${await res.text()}`);
  return revision;
}

function start(
  sink: RecordingSink,
  namespace: string,
  opts: { resumeFrom?: string; streamingLists?: boolean; pageSize?: number; hooks?: ReflectorHooks },
) {
  const r = new Reflector({
    client,
    scope: { account: 'test', resource: CONFIGMAPS, namespace },
    sink,
    logger,
    streamingLists: opts.streamingLists ?? true,
    pageSize: opts.pageSize,
    hooks: opts.hooks,
  });
  reflectors.push(r);
  r.start(opts.resumeFrom);
  return r;
}

beforeAll(async () => {
  cp = await ControlPlane.start({ dir: mkdtempSync(join(tmpdir(), 'agent-410-')) });
  client = await KubeClient.create({ kubeconfigFile: cp.kubeconfig });
});
afterAll(async () => {
  await Promise.all(reflectors.map((r) => r.stop()));
  client?.close();
  await cp?.stop();
});

describe('reflector after etcd compaction', () => {
  it('resumes from a compacted resourceVersion: 410 Gone, then a clean relist of the current state', async () => {
    await kubectl(['create', 'namespace', 'gone']);
    for (const n of ['a', 'b', 'c']) await kubectl(['create', 'configmap', n, '-n', 'gone']);
    const first = new RecordingSink();
    const a = start(first, 'gone', {});
    await waitFor('initial sync', () => a.synced && first.count('syncEnd') === 1);
    const resumeFrom = a.resourceVersion;
    expect(resumeFrom).toBeTruthy();
    await a.stop();

    // While the agent is away: changes, compaction, and an API server whose watch cache starts after them.
    await kubectl(['delete', 'configmap', 'a', '-n', 'gone']);
    await kubectl(['create', 'configmap', 'd', '-n', 'gone']);
    for (let i = 0; i < 5; i++) await kubectl(['create', 'configmap', `x${i}`, '-n', 'default']);
    await compactEtcd();
    await cp.restart('kube-apiserver');

    const reasons: string[] = [];
    const second = new RecordingSink();
    const b = start(second, 'gone', { resumeFrom, hooks: { onWatchRestart: (_s, reason) => reasons.push(reason) } });
    await waitFor('relist after 410', () => b.synced && second.count('syncEnd') === 1);
    expect(reasons[0]).toBe('gone');
    expect(second.events[0]).toMatchObject({ t: 'syncStart' });
    const listed = second
      .changes()
      .map((c) => `${c.t} ${c.name}`)
      .filter((n) => !n.endsWith('kube-root-ca.crt'))
      .sort();
    expect(listed).toEqual(['ADDED b', 'ADDED c', 'ADDED d']);
    expect(Number(b.resourceVersion)).toBeGreaterThan(Number(resumeFrom));

    // And the relisted watch is live.
    await kubectl(['create', 'configmap', 'e', '-n', 'gone']);
    await waitFor('live event', () => second.changes().some((c) => c.t === 'ADDED' && c.name === 'e'));
  });

  it('restarts a paginated LIST whose continue token expired', async () => {
    await kubectl(['create', 'namespace', 'pages']);
    for (let i = 0; i < 6; i++) await kubectl(['create', 'configmap', `p${i}`, '-n', 'pages']);
    const sink = new RecordingSink();
    sink.holdAfterChanges = 2;
    const reasons: string[] = [];
    // Take one page, then hold the list (backpressure) while etcd compacts past the token's revision.
    const r = start(sink, 'pages', {
      streamingLists: false,
      pageSize: 2,
      hooks: { onWatchRestart: (_s, reason) => reasons.push(reason) },
    });
    await waitFor('first page', () => sink.changes().length >= 2 && !sink.room);
    for (let i = 0; i < 5; i++) await kubectl(['create', 'configmap', `y${i}`, '-n', 'default']);
    await compactEtcd();
    // A fresh API server has no cache snapshot for the token's revision, so the continuation goes to etcd.
    await cp.restart('kube-apiserver');
    sink.setRoom(true);
    await waitFor('complete list', () => r.synced);
    expect(r.state).toBe('watching');
    const listed = new Set(sink.changes().map((c) => c.name));
    for (let i = 0; i < 6; i++) expect(listed.has(`p${i}`)).toBe(true);
    // The continuation got 410 Expired: the list started over (a second SyncStart) and ended once.
    expect(reasons).toContain('gone');
    expect(sink.count('syncStart')).toBe(2);
    expect(sink.count('syncEnd')).toBe(1);
    expect(sink.events.findIndex((e) => e.t === 'syncEnd')).toBeGreaterThan(
      sink.events.findLastIndex((e) => e.t === 'syncStart'),
    );
  });
});
