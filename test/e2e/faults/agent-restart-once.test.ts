/**
 * The gap the in-memory once left (README "Reliability"): an agent killed after its operation reached the API server
 * and before its result reached the plugin-server. The rig's real agent gets a runJob (generateName) and a JSON-patch
 * append while everything it sends the plugin-server is dropped (a Toxiproxy blackhole on the agent → plugin-server
 * direction only, so operations still arrive); once both changes are in the cluster the agent is SIGKILLed, the tasks
 * fail as retryable, a new agent process starts and Orca's resume sends the same operation ids to it. The cluster
 * must show each change once, and the resumed tasks must succeed naming the first run's Job.
 *
 * The same rig then cancels tasks (`POST /scale-agent/tasks/{id}/cancel`, proto Cancel): a deploy whose first read is
 * held on the agent → API server link (a Toxiproxy latency it cannot pass while the toxic stays; removed, the held
 * bytes go on) stops before it writes, and a delete whose DELETE went out (the object is terminating, held by a
 * finalizer) runs to its end and is reported as it ended.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, FaultRig, WIDGET_GROUP } from '../../infra/faults/index.js';
import { kubeRequest, metricSum, objectPath } from '../../infra/faults/kube-raw.js';
import { waitFor } from '../../infra/wait.js';
import { OpsClient, type Obj, type TaskBody } from '../operations-helpers.js';

let rig: FaultRig;
let ops: OpsClient;
let ns: string;

beforeAll(async () => {
  rig = await FaultRig.onSharedCluster('once', { store: 'memory', namespaces: 1 });
  ops = new OpsClient(rig.server);
  ns = rig.namespaces[0]!;
});
afterAll(async () => {
  await rig?.stop();
});

describe('faults: agent SIGKILLed between applying an operation and delivering its result', () => {
  it('the resumed runJob and JSON-patch append apply once, and their tasks succeed', async () => {
    const kc = rig.kubeConfig();
    const ledgerPath = objectPath(`${WIDGET_GROUP}/v1`, 'Widget', ns, 'ledger');
    await kubeRequest(kc, 'POST', objectPath(`${WIDGET_GROUP}/v1`, 'Widget', ns), {
      apiVersion: `${WIDGET_GROUP}/v1`,
      kind: 'Widget',
      metadata: { name: 'ledger' },
      spec: { applied: [] },
    });
    const ledger = () => kubeRequest<Obj>(kc, 'GET', ledgerPath);
    const jobs = async () =>
      (await kubeRequest<{ items: Obj[] }>(kc, 'GET', `/apis/batch/v1/namespaces/${ns}/jobs`)).items;

    await rig.toxiproxy.addToxic('grpc', 'results-dropped', 'upstream', {
      type: 'timeout',
      attributes: { timeout: 0 },
    });
    const jobTask = await ops.submit([
      {
        runJob: {
          credentials: ACCOUNT,
          cloudProvider: 'kubernetes',
          application: 'calc',
          namespace: ns,
          source: 'text',
          manifest: {
            apiVersion: 'batch/v1',
            kind: 'Job',
            metadata: { generateName: 'pi-' },
            spec: {
              template: {
                spec: { restartPolicy: 'Never', containers: [{ name: 'pi', image: 'perl', command: ['true'] }] },
              },
            },
          },
        },
      },
    ]);
    const patchTask = await ops.submit([
      {
        patchManifest: {
          account: ACCOUNT,
          location: ns,
          manifestName: `Widget.${WIDGET_GROUP} ledger`,
          options: { mergeStrategy: 'json' },
          patchBody: [{ op: 'add', path: '/spec/applied/-', value: 'first' }],
        },
      },
    ]);

    // Applied in the cluster, result not delivered: now the agent dies.
    await waitFor('the Job and the append in the cluster', async () => {
      return (await jobs()).length === 1 && ((await ledger()).spec.applied as string[]).length === 1;
    });
    await rig.agent.kill();
    await rig.toxiproxy.removeToxic('grpc', 'results-dropped');
    const failed = async (id: string): Promise<TaskBody> => {
      const t = await ops.waitTask(id);
      expect(t.status, t.history.map((h) => h.status).join('\n')).toMatchObject({ failed: true, retryable: true });
      return t;
    };
    await failed(jobTask);
    await failed(patchTask);

    await rig.agent.restart();
    const resumed = async (id: string): Promise<TaskBody> => {
      const r = await ops.post(`/task/${id}:resume`, {});
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const t = await ops.waitTask(id);
      expect(t.status.failed, t.history.map((h) => h.status).join('\n')).toBe(false);
      return t;
    };
    const job = await resumed(jobTask);
    await resumed(patchTask);

    const live = await jobs();
    expect({ jobs: live.length, appended: (await ledger()).spec.applied }).toEqual({ jobs: 1, appended: ['first'] });
    expect(job.resultObjects[0]?.deployedNamesByLocation).toEqual({ [ns]: [`job ${live[0]?.metadata.name}`] });
  });
});

describe('cancel: a task cancelled while its operation is at the agent', () => {
  const cancels = async (decision: string): Promise<number> => {
    const text = await (await fetch(`${rig.agent.adminBase}/metrics`)).text();
    return metricSum(text, 'scale_agent_agent_operation_cancels_total', { decision });
  };
  const atAgent = (taskId: string) =>
    waitFor('the operation sent to the agent', async () => {
      const r = await rig.server.get<Obj>(`/armory/agent/operations/${taskId}.0`);
      return r.body.state === 'sent';
    });
  const configMaps = async () =>
    (await kubeRequest<{ items: Obj[] }>(rig.kubeConfig(), 'GET', `/api/v1/namespaces/${ns}/configmaps`)).items.map(
      (c) => c.metadata.name as string,
    );
  const deployConfigMap = (name: string) => [
    {
      deployManifest: {
        account: ACCOUNT,
        moniker: { app: 'calc' },
        namespaceOverride: ns,
        source: 'text',
        // Versioned (a ConfigMap is, in Spinnaker): the agent reads the existing versions before it writes.
        manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { a: '1' } }],
      },
    },
  ];

  it('not yet written: the agent stops it, nothing reaches the cluster, and the task fails as cancelled', async () => {
    const stopped = await cancels('stop');
    await rig.toxiproxy.addToxic('apiserver', 'held', 'upstream', {
      type: 'latency',
      attributes: { latency: 600_000 },
    });
    let id: string;
    try {
      id = await ops.submit(deployConfigMap('cancelled'));
      await atAgent(id);
      const r = await ops.post(`/scale-agent/tasks/${id}/cancel`, {});
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({ id, resourceUri: `/task/${id}`, cancelling: true });
      const t = await ops.waitTask(id);
      expect(t.status, t.history.map((h) => h.status).join('\n')).toMatchObject({ failed: true, retryable: false });
      expect(t.history.at(-1)?.status).toMatch(
        /^Orchestration failed: KubernetesDeployManifestOperation \| ScaleAgentError: \[cancelled before it changed anything: cancelled by /,
      );
      expect(t.resultObjects.at(-1)).toMatchObject({ type: 'EXCEPTION' });
      expect(await cancels('stop')).toBe(stopped + 1);
    } finally {
      await rig.toxiproxy.removeToxic('apiserver', 'held');
    }
    // The held read reaches the API server now. A deploy after it, on the same link, succeeding means anything the
    // cancelled one had sent arrived before it: still no version of the cancelled ConfigMap.
    const after = await ops.waitTask(await ops.submit(deployConfigMap('after-cancel')));
    expect(after.status.failed, after.history.map((h) => h.status).join('\n')).toBe(false);
    const names = await configMaps();
    expect(names).toContain('after-cancel-v000');
    expect(names.filter((n) => n.startsWith('cancelled'))).toEqual([]);
  });

  it('its write already sent: it runs to its end, and the task is reported as it ended', async () => {
    const ranToEnd = await cancels('run-to-end');
    const kc = rig.kubeConfig();
    const path = `/api/v1/namespaces/${ns}/configmaps/held`;
    await kubeRequest(kc, 'POST', `/api/v1/namespaces/${ns}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'held', finalizers: ['scale-agent.test/hold'] },
      data: { a: '1' },
    });
    const release = () =>
      kubeRequest(kc, 'PATCH', path, { metadata: { finalizers: null } }, 'application/merge-patch+json');
    let id: string;
    try {
      id = await ops.submit([
        {
          deleteManifest: {
            account: ACCOUNT,
            location: ns,
            manifestName: 'configMap held',
            options: { waitTimeoutSeconds: 300 },
          },
        },
      ]);
      // The DELETE went out: the object is terminating, and the operation waits for it to go.
      await waitFor(
        'held terminating',
        async () => !!(await kubeRequest<Obj>(kc, 'GET', path)).metadata.deletionTimestamp,
      );
      const r = await ops.post(`/scale-agent/tasks/${id}/cancel`, {});
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.cancelling).toBe(true);
      await waitFor('the agent to decide', async () => (await cancels('run-to-end')) === ranToEnd + 1);
      expect((await ops.task(id)).status.completed).toBe(false);
    } finally {
      // Released either way: a finalizer left behind would hold the namespace's deletion.
      await release();
    }
    const t = await ops.waitTask(id);
    const history = t.history.map((h) => h.status);
    expect(t.status, history.join('\n')).toMatchObject({ failed: false, completed: true });
    expect(history).toContainEqual(expect.stringMatching(/^Cancel requested by /));
    expect(history).toContainEqual(
      expect.stringMatching(/^Cancel requested \(cancelled by .*\) after a write went out: ran to its end$/),
    );
    expect(t.resultObjects[0]).toMatchObject({ manifestNamesByNamespace: { [ns]: ['configMap held'] } });
    expect(await configMaps()).not.toContain('held');
  });

  it('a finished task is answered as it is, and one the caller cannot name is a 404', async () => {
    const id = await ops.submit(deployConfigMap('finished'));
    const done = await ops.waitTask(id);
    const r = await ops.post(`/scale-agent/tasks/${id}/cancel`, {});
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.cancelling).toBe(false);
    expect((await ops.task(id)).status).toEqual(done.status);
    expect((await ops.post('/scale-agent/tasks/no-such-task/cancel', {})).status).toBe(404);
  });
});
