/**
 * The gap the in-memory once left (README "Reliability"): an agent killed after its operation reached the API server
 * and before its result reached the plugin-server. The rig's real agent gets a runJob (generateName) and a JSON-patch
 * append while everything it sends the plugin-server is dropped (a Toxiproxy blackhole on the agent → plugin-server
 * direction only, so operations still arrive); once both changes are in the cluster the agent is SIGKILLed, the tasks
 * fail as retryable, a new agent process starts and Orca's resume sends the same operation ids to it. The cluster
 * must show each change once, and the resumed tasks must succeed naming the first run's Job.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACCOUNT, FaultRig, WIDGET_GROUP } from '../../infra/faults/index.js';
import { kubeRequest, objectPath } from '../../infra/faults/kube-raw.js';
import { waitFor } from '../../infra/wait.js';
import { OpsClient, type Obj, type TaskBody } from '../operations-helpers.js';

describe('faults: agent SIGKILLed between applying an operation and delivering its result', () => {
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
