/**
 * An operation applied in the cluster, its result lost, the agent restarted, then the same operation id sent again
 * (Orca's resume): the cluster must show the change once and the repeat must succeed with the first run's answer.
 * Each run goes through its own OperationRunner, the object an agent process keeps its in-memory once in
 * (src/agent/operations.ts), with a KubeClient of its own: a second runner is exactly what a restarted agent has.
 */
import { describe, expect, it } from 'vitest';
import type { AccountConfig } from '../../../src/agent/config.js';
import { KubeClient } from '../../../src/agent/kube/client.js';
import { OperationRunner } from '../../../src/agent/operations.js';
import { markedJsonPatch } from '../../../src/agent/ops/once-in-cluster.js';
import { createLogger } from '../../../src/shared/logging.js';
import { formatIssues, parseOperations } from '../../../src/plugin-server/api/descriptions/index.js';
import type { KubeObject } from '../../../src/shared/ops/types.js';
import { operationMessage } from '../../../src/shared/ops/wire.js';
import type { Operation } from '../../../src/shared/proto.js';
import { adminKubeConfig, createNamespace, testEnv } from '../../infra/index.js';
import { installWidgetCrd, WIDGET_GROUP } from '../../infra/faults/index.js';
import { kubeRequest, objectPath } from '../../infra/faults/kube-raw.js';
import { deployment, eventually, getJson, type Obj } from './helpers.js';

const ACCOUNT = 'k8s-local';
const logger = createLogger({ name: 'once-in-cluster-test', level: 'silent' });

/** The wire message the plugin-server sends for one Clouddriver description. */
function wireOperation(
  operationId: string,
  type: string,
  description: Record<string, unknown>,
  sentBeforeOnSessions: string[] = [],
): Operation {
  const parsed = parseOperations([{ [type]: description }], { endpoint: 'kubernetes' });
  if (!parsed.ok) throw new Error(formatIssues(parsed.errors).join('; '));
  const op = parsed.operations[0];
  if (!op) throw new Error('no operation parsed');
  return operationMessage(operationId, op, Date.now() + 300_000, sentBeforeOnSessions);
}

interface Answer {
  ok: boolean;
  error: string;
  /** What the plugin-server hands Orca: the Clouddriver result object. */
  result: Obj;
  messages: string[];
  retryable: boolean;
}

/**
 * Runs the operation in a new "agent process" (a runner with an empty memory) and returns what it would send back.
 * `sessions`: the process's streams were welcomed as these (the operation comes on the last one).
 */
async function runInFreshAgent(op: Operation, sessions: string[] = ['s-fresh']): Promise<Answer> {
  const account = { name: ACCOUNT, kubeconfigFile: testEnv().kubeconfig, serviceAccount: false } as AccountConfig;
  let answered!: (r: Answer) => void;
  const answer = new Promise<Answer>((resolve) => (answered = resolve));
  const runner = new OperationRunner({
    logger,
    client: (name) => (name === ACCOUNT ? KubeClient.create(account) : undefined),
    send: (r) => {
      const body = JSON.parse(Buffer.from(r.resultJson).toString('utf8')) as {
        result: Obj;
        messages: string[];
        retryable?: boolean;
      };
      answered({
        ok: r.ok,
        error: r.error,
        result: body.result,
        messages: body.messages,
        retryable: body.retryable ?? false,
      });
    },
  });
  for (const s of sessions) runner.sessionOpened(s);
  runner.run(op, sessions.at(-1) ?? '');
  // Not stopped: the agent this stands for is killed (SIGKILL runs no shutdown), and its memory dies with the runner.
  return answer;
}

/** The parts of a deploy-shaped result Orca reads (the live objects themselves may have moved on). */
function namesOf(result: Obj): Obj {
  const { manifestNamesByNamespace, deployedNamesByLocation, createdArtifacts, boundArtifacts } = result;
  return { manifestNamesByNamespace, deployedNamesByLocation, createdArtifacts, boundArtifacts };
}

const job = (metadata: Obj) => ({
  apiVersion: 'batch/v1',
  kind: 'Job',
  metadata,
  spec: {
    template: {
      spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'busybox', command: ['true'] }] },
    },
  },
});

const runJob = (ns: string, manifest: Obj) => ({
  credentials: ACCOUNT,
  cloudProvider: 'kubernetes',
  application: 'calc',
  namespace: ns,
  source: 'text',
  manifest,
});

async function jobs(ns: string): Promise<Obj[]> {
  return (await getJson<{ items: Obj[] }>(['jobs', '-n', ns])).items;
}

describe('an operation sent again after an agent restart is applied once', () => {
  it('runJob with generateName: the repeat finds the Job the first run created and answers with it', async () => {
    const ns = await createNamespace('once-job');
    const op = wireOperation('01JOBTASK.0', 'runJob', runJob(ns, job({ generateName: 'pi-' })));

    const first = await runInFreshAgent(op);
    expect(first.error).toBe('');
    const created = await jobs(ns);
    expect(created).toHaveLength(1);

    const repeat = await runInFreshAgent(op);
    expect(repeat.error).toBe('');
    expect(repeat.ok).toBe(true);
    expect((await jobs(ns)).map((j) => j.metadata.name)).toEqual([created[0]?.metadata.name]);
    expect(created[0]?.metadata.annotations['scale-agent.io/operation-id']).toBe('01JOBTASK.0');
    expect(namesOf(repeat.result)).toEqual(namesOf(first.result));
    expect(repeat.result.deployedNamesByLocation[ns]).toEqual([`job ${created[0]?.metadata.name}`]);
    expect(repeat.result.jobStatus.name).toBe(created[0]?.metadata.name);
    expect(repeat.messages.join('\n')).toContain('created by an earlier run of operation 01JOBTASK.0');

    // Another operation (the next run of the pipeline) still creates a Job of its own.
    const next = await runInFreshAgent({ ...op, operationId: '01JOBTASK2.0' });
    expect(next.ok).toBe(true);
    expect(await jobs(ns)).toHaveLength(2);
  });

  it('runJob with a named Job (delete, then create): the repeat keeps the Job of the first run', async () => {
    const ns = await createNamespace('once-job-named');
    const op = wireOperation('01NAMEDTASK.0', 'runJob', runJob(ns, job({ name: 'migrate' })));
    expect((await runInFreshAgent(op)).ok).toBe(true);
    const uid = (await jobs(ns))[0]?.metadata.uid as string;

    const repeat = await runInFreshAgent(op);
    expect(repeat.ok).toBe(true);
    expect((await jobs(ns)).map((j) => j.metadata.uid)).toEqual([uid]);

    const next = await runInFreshAgent({ ...op, operationId: '01NAMEDTASK2.0' });
    expect(next.ok).toBe(true);
    const after = await jobs(ns);
    expect(after).toHaveLength(1);
    expect(after[0]?.metadata.uid).not.toBe(uid);
  });

  it('deployManifest with two generateName objects of one kind: each is found again, none made twice', async () => {
    const ns = await createNamespace('once-deploy');
    const cm = (metadata: Obj, data: Obj) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata, data });
    const op = wireOperation('01DEPLOYTASK.0', 'deployManifest', {
      account: ACCOUNT,
      moniker: { app: 'shop' },
      namespaceOverride: ns,
      manifests: [
        cm({ generateName: 'seed-' }, { n: '1' }),
        cm({ name: 'settings' }, { mode: 'blue' }),
        cm({ generateName: 'seed-' }, { n: '2' }),
      ],
    });
    const first = await runInFreshAgent(op);
    expect(first.error).toBe('');
    const repeat = await runInFreshAgent(op);
    expect(repeat.ok).toBe(true);
    const seeds = (await getJson<{ items: Obj[] }>(['configmaps', '-n', ns])).items.filter((c) =>
      String(c.metadata.name).startsWith('seed-'),
    );
    expect(seeds.map((c) => c.data.n).sort()).toEqual(['1', '2']);
    expect(namesOf(repeat.result)).toEqual(namesOf(first.result));
  });

  describe('operations that count from the state they find', () => {
    const deployWeb = (ns: string, image: string) =>
      runInFreshAgent(
        wireOperation(`01DEPLOY-${image}.0`, 'deployManifest', {
          account: ACCOUNT,
          moniker: { app: 'shop' },
          namespaceOverride: ns,
          manifests: [deployment('web', { app: 'web' }, image)],
        }),
      );
    const revisions = async (ns: string): Promise<Map<string, string>> => {
      const list = await getJson<{ items: Obj[] }>(['replicasets', '-n', ns, '-l', 'app=web']);
      return new Map(
        list.items.map((rs) => [
          rs.metadata.annotations?.['deployment.kubernetes.io/revision'] as string,
          rs.spec.template.spec.containers[0].image as string,
        ]),
      );
    };
    const target = (ns: string) => ({ account: ACCOUNT, location: ns, manifestName: 'deployment web' });

    it('undoRollout one revision back: the repeat does not go back again', async () => {
      const ns = await createNamespace('once-undo');
      for (const [i, image] of ['nginx:1.1', 'nginx:1.2', 'nginx:1.3'].entries()) {
        expect((await deployWeb(ns, image)).ok).toBe(true);
        await eventually(
          () => revisions(ns),
          (m) => m.has(String(i + 1)),
        );
      }
      const image = async () => (await getJson(['deployment', 'web', '-n', ns])).spec.template.spec.containers[0].image;
      const undo = wireOperation('01UNDOTASK.0', 'undoRolloutManifest', { ...target(ns), numRevisionsBack: 1 });
      expect((await runInFreshAgent(undo)).ok).toBe(true);
      expect(await image()).toBe('nginx:1.2');
      // The controller makes the ReplicaSet gone back to the newest revision: "one back" is now nginx:1.3.
      await eventually(
        () => revisions(ns),
        (m) => m.get('4') === 'nginx:1.2',
      );

      const repeat = await runInFreshAgent(undo);
      expect(repeat.ok).toBe(true);
      expect(await image()).toBe('nginx:1.2');
      expect(repeat.messages.join('\n')).toContain('already took this change');
    });

    it('rollingRestart: the repeat does not restart again', async () => {
      const ns = await createNamespace('once-restart');
      expect((await deployWeb(ns, 'nginx:1.1')).ok).toBe(true);
      const restart = wireOperation('01RESTARTTASK.0', 'rollingRestartManifest', target(ns));
      const restartedAt = async () =>
        (await getJson(['deployment', 'web', '-n', ns])).spec.template.metadata.annotations[
          'kubectl.kubernetes.io/restartedAt'
        ] as string;
      expect((await runInFreshAgent(restart)).ok).toBe(true);
      const first = await restartedAt();
      expect(Date.parse(first)).toBeGreaterThan(0);

      expect((await runInFreshAgent(restart)).ok).toBe(true);
      expect(await restartedAt()).toBe(first);
    });
  });

  describe('a JSON patch that appends', () => {
    const widgets = (ns: string, name?: string) => objectPath(`${WIDGET_GROUP}/v1`, 'Widget', ns, name);
    const patchOp = (id: string, ns: string, value: string, sentBeforeOnSessions: string[] = []) =>
      wireOperation(
        id,
        'patchManifest',
        {
          account: ACCOUNT,
          location: ns,
          manifestName: `Widget.${WIDGET_GROUP} ledger`,
          options: { mergeStrategy: 'json' },
          patchBody: [{ op: 'add', path: '/spec/applied/-', value }],
        },
        sentBeforeOnSessions,
      );
    const ledgerIn = async (name: string) => {
      const kc = adminKubeConfig();
      await installWidgetCrd(kc);
      const ns = await createNamespace(name);
      await kubeRequest(kc, 'POST', widgets(ns), {
        apiVersion: `${WIDGET_GROUP}/v1`,
        kind: 'Widget',
        metadata: { name: 'ledger' },
        spec: { applied: [] },
      });
      return { ns, ledger: () => kubeRequest<Obj>(kc, 'GET', widgets(ns, 'ledger')) };
    };

    it('sent again after its outcome was lost, its mark since replaced: refused as not retryable, not applied twice', async () => {
      const { ns, ledger } = await ledgerIn('once-patch-lost');
      // The first delivery of 01LOST.0 applied 'x' on a session of a process that is gone; another marked patch
      // followed, so the object's mark names that one.
      expect((await runInFreshAgent(patchOp('01LOST.0', ns, 'x'), ['s-gone'])).ok).toBe(true);
      expect((await runInFreshAgent(patchOp('01OTHER.0', ns, 'y'))).ok).toBe(true);
      const repeat = await runInFreshAgent(patchOp('01LOST.0', ns, 'x', ['s-gone']), ['s-new']);
      expect(repeat).toMatchObject({ ok: false, retryable: false });
      expect(repeat.error).toMatch(/was sent before and its outcome never came back.*not retryable/);
      expect((await ledger()).spec.applied).toEqual(['x', 'y']);
      // With its mark still on the object, the same repeat finds it and succeeds without applying.
      const marked = await runInFreshAgent(patchOp('01OTHER.0', ns, 'y', ['s-gone']), ['s-new']);
      expect(marked.ok).toBe(true);
      expect((await ledger()).spec.applied).toEqual(['x', 'y']);
    });

    it('sent again after a delivery that never arrived at this process: applied (once)', async () => {
      const { ns, ledger } = await ledgerIn('once-patch-never');
      expect((await runInFreshAgent(patchOp('01OTHER.0', ns, 'y'))).ok).toBe(true);
      // The earlier delivery went out on s-1, a session of this very process, which never received it (a
      // blackholed link): no earlier run is possible, so the operation runs although the mark is another's.
      const again = await runInFreshAgent(patchOp('01NEVER.0', ns, 'z', ['s-1']), ['s-1', 's-2']);
      expect(again.error).toBe('');
      expect((await ledger()).spec.applied).toEqual(['y', 'z']);
    });

    it('is applied once, on an object with no annotations and on one with them', async () => {
      const kc = adminKubeConfig();
      await installWidgetCrd(kc);
      const ns = await createNamespace('once-patch');
      await kubeRequest(kc, 'POST', widgets(ns), {
        apiVersion: `${WIDGET_GROUP}/v1`,
        kind: 'Widget',
        metadata: { name: 'ledger' },
        spec: { applied: [] },
      });
      const ledger = () => kubeRequest<Obj>(kc, 'GET', widgets(ns, 'ledger'));
      expect((await ledger()).metadata.annotations).toBeUndefined();

      const a = patchOp('01PATCHTASK.0', ns, 'a');
      const first = await runInFreshAgent(a);
      expect(first.error).toBe('');
      const repeat = await runInFreshAgent(a);
      expect(repeat.ok).toBe(true);
      let live = await ledger();
      expect(live.spec.applied).toEqual(['a']);
      expect(repeat.result).toEqual(first.result);
      expect(repeat.messages.join('\n')).toContain(
        'already took this change (an earlier run of operation 01PATCHTASK.0)',
      );
      expect(live.metadata.annotations['scale-agent.io/last-operation-id']).toBe('01PATCHTASK.0');

      // Now the map exists: the mark is one more key in it.
      const b = patchOp('01PATCHTASK2.0', ns, 'b');
      expect((await runInFreshAgent(b)).ok).toBe(true);
      expect((await runInFreshAgent(b)).ok).toBe(true);
      live = await ledger();
      expect(live.spec.applied).toEqual(['a', 'b']);
      expect(live.metadata.annotations['scale-agent.io/last-operation-id']).toBe('01PATCHTASK2.0');
    });

    it('creating the annotations map is conditional on the object read: a stale read is a 409', async () => {
      const kc = adminKubeConfig();
      await installWidgetCrd(kc);
      const ns = await createNamespace('once-patch-rv');
      const stale = await kubeRequest<KubeObject>(kc, 'POST', widgets(ns), {
        apiVersion: `${WIDGET_GROUP}/v1`,
        kind: 'Widget',
        metadata: { name: 'ledger' },
        spec: { applied: [] },
      });
      // Someone else gives the object annotations after our read.
      await kubeRequest(
        kc,
        'PATCH',
        widgets(ns, 'ledger'),
        { metadata: { annotations: { team: 'a' } } },
        'application/merge-patch+json',
      );
      const patch = markedJsonPatch([{ op: 'add', path: '/spec/applied/-', value: 'x' }], stale, '01RVTASK.0');
      const client = await KubeClient.create({ kubeconfigFile: testEnv().kubeconfig });
      try {
        const status = await client
          .request('PATCH', widgets(ns, 'ledger'), { body: patch, contentType: 'application/json-patch+json' })
          .then(
            () => 200,
            (e: { status?: number }) => e.status,
          );
        expect(status).toBe(409);
      } finally {
        client.close();
      }
      const live = await kubeRequest<Obj>(kc, 'GET', widgets(ns, 'ledger'));
      expect(live.metadata.annotations).toEqual({ team: 'a' });
      expect(live.spec.applied).toEqual([]);
    });
  });
});
