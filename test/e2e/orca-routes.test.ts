/**
 * The routes Orca's Kubernetes stages call besides operations, end to end: a real plugin-server (memory and MySQL
 * store: tasks live there) and agents as processes against the shared control plane. Cluster coordinates and dynamic targets over versioned ReplicaSets
 * deployed as Orca deploys them, an embedded/base64 artifact fetched and deployed, a failed, retryable task resumed
 * under its id (its account's agent was down, then came back), restart and retryability, and a Run Job's status,
 * property file and cancellation.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { kubectl, waitFor } from '../infra/index.js';
import { KwokNode } from '../infra/kwok.js';
import { replicaSet } from '../infra/manifests.js';
import type { PluginServerProcess } from '../infra/processes.js';
import { useStack } from '../infra/stack.js';
import { OpsClient, type Obj } from './operations-helpers.js';

async function exists(args: string[]): Promise<boolean> {
  const r = await kubectl(['get', ...args, '-o', 'name'], { allowFail: true });
  return r.code === 0;
}

const shopWeb = (replicas: number, image: string) =>
  replicaSet('shop-web', { app: 'shop-web' }, replicas, { containers: [{ name: 'main', image }] });

for (const storeType of ['memory', 'mysql'] as const) {
  describe(`Orca routes (${storeType} store)`, () => {
    const account = `orca-routes-${storeType}`;
    const uncached = `orca-live-${storeType}`;
    const stack = useStack({
      name: `orca-routes-${storeType}`,
      store: storeType,
      // A short wait for an agent, so an operation for an account whose agent is down fails (retryable) quickly.
      server: { extra: { operations: { agentWaitSeconds: 2 } } },
      agent: {
        accounts: [
          { name: account },
          // The same namespace without ReplicaSets in the cache: its cluster reads go live through the agent.
          { name: uncached, omitKinds: ['ReplicaSet'] },
        ],
      },
    });
    const ops = new OpsClient(stack);

    const deploy = (acct: string, manifests: object[], moniker: Obj = { app: 'shop', cluster: 'shop-web' }) => [
      {
        deployManifest: { account: acct, cloudProvider: 'kubernetes', moniker, namespaceOverride: stack.ns, manifests },
      },
    ];

    async function request(
      method: string,
      path: string,
      body?: unknown,
      headers: Record<string, string> = {},
    ): Promise<{ status: number; body: Obj }> {
      const res = await fetch(stack.httpBase + path, {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await res.text();
      return { status: res.status, body: (text ? JSON.parse(text) : {}) as Obj };
    }

    it('lists a versioned ReplicaSet cluster and picks the dynamic targets Orca asks for', async () => {
      // Three versions (different images, so each deploy is a new version), sizes chosen so every criteria differs.
      const sizes = [1, 3, 2];
      for (const [i, replicas] of sizes.entries()) {
        const t = await ops.run(deploy(account, [shopWeb(replicas, `registry.example.com/web:${i}`)]));
        expect(t.resultObjects[0]?.manifestNamesByNamespace[stack.ns]).toEqual([`replicaSet shop-web-v00${i}`]);
      }
      // Another cluster of the same application in the namespace is not part of it.
      await ops.run(
        deploy(account, [{ ...shopWeb(1, 'registry.example.com/api:1'), metadata: { name: 'shop-api' } }], {
          app: 'shop',
          cluster: 'shop-api',
        }),
      );

      const base = `/manifests/${account}/${stack.ns}/replicaSet/cluster/shop/shop-web`;
      const list = await stack.get<Obj[]>(base);
      expect(list.status).toBe(200);
      expect(list.body).toEqual(
        ['shop-web-v000', 'shop-web-v001', 'shop-web-v002'].map((name) => ({
          kind: 'replicaSet',
          namespace: stack.ns,
          name,
        })),
      );
      // The alias Orca may use for the kind reads the same cluster.
      expect((await stack.get<Obj[]>(`/manifests/${account}/${stack.ns}/rs/cluster/shop/shop-web`)).body).toHaveLength(
        3,
      );
      expect(
        (await stack.get<Obj[]>(`/manifests/${account}/${stack.ns}/replicaSet/cluster/other/shop-web`)).body,
      ).toEqual([]);

      const picks: Record<string, string> = {
        newest: 'shop-web-v002',
        second_newest: 'shop-web-v001',
        oldest: 'shop-web-v000',
        largest: 'shop-web-v001',
        smallest: 'shop-web-v000',
      };
      for (const [criteria, name] of Object.entries(picks)) {
        const r = await stack.get<Obj>(`${base}/dynamic/${criteria}`);
        expect(r.status, criteria).toBe(200);
        expect(r.body, criteria).toEqual({ kind: 'replicaSet', namespace: stack.ns, name });
      }

      const none = await stack.get<Obj>(
        `/manifests/${account}/${stack.ns}/replicaSet/cluster/shop/shop-nothing/dynamic/newest`,
      );
      expect(none.status).toBe(404);
      expect(none.body).toMatchObject({
        code: 'SA_ERR_NOT_FOUND',
        message: expect.stringMatching(/No manifests matching/),
      });
      const bad = await stack.get<Obj>(`${base}/dynamic/youngest`);
      expect(bad.status).toBe(400);
      expect(bad.body).toMatchObject({
        code: 'SA_ERR_INVALID_INPUT',
        message: expect.stringMatching(/unknown criteria/),
      });
      // An account that does not cache ReplicaSets answers the same, read live.
      expect(
        (await stack.get<Obj[]>(`/manifests/${uncached}/${stack.ns}/replicaSet/cluster/shop/shop-web`)).body,
      ).toEqual(list.body);
      expect(
        (await stack.get<Obj>(`/manifests/${uncached}/${stack.ns}/replicaSet/cluster/shop/shop-web/dynamic/largest`))
          .body,
      ).toEqual({ kind: 'replicaSet', namespace: stack.ns, name: 'shop-web-v001' });
      expect((await stack.get<Obj[]>(`/admin/cache/${uncached}?kind=ReplicaSet`)).body).toEqual([]);
      // X-SPINNAKER-ACCOUNTS is a WRITE list: it does not limit reads (Fiat's READ does, per user).
      const notListed = await request('GET', base, undefined, { 'X-SPINNAKER-ACCOUNTS': 'other' });
      expect(notListed.body).toEqual(list.body);
      const noAccount = await stack.get<Obj>(`/manifests/nobody/${stack.ns}/replicaSet/cluster/shop/shop-web`);
      expect(noAccount.status).toBe(404);
    });

    it('fetches an embedded/base64 artifact and deploys what it holds; other types are refused with a reason', async () => {
      const yaml = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-artifact\ndata:\n  color: teal\n`;
      const res = await fetch(`${stack.httpBase}/artifacts/fetch/`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          type: 'embedded/base64',
          name: 'settings.yml',
          reference: Buffer.from(yaml).toString('base64'),
        }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/application\/octet-stream/);
      const fetched = await res.text();
      expect(fetched).toBe(yaml);

      await ops.run(deploy(account, [parseYaml(fetched) as object], { app: 'shop' }));
      const { stdout } = await kubectl([
        'get',
        'configmap',
        'from-artifact-v000',
        '-n',
        stack.ns,
        '-o',
        'jsonpath={.data.color}',
      ]);
      expect(stdout).toBe('teal');

      const other = await request('PUT', '/artifacts/fetch/', { type: 'github/file', reference: 'https://x/y.yml' });
      expect(other.status).toBe(400);
      expect(other.body.message).toMatch(/artifact type "github\/file" cannot be fetched here.*only embedded\/base64/);
      const bad = await request('PUT', '/artifacts/fetch/', ['not', 'an', 'artifact']);
      expect(bad.status).toBe(400);
      expect(bad.body.code).toBe('SA_ERR_INVALID_INPUT');
    });

    it('resumes a failed, retryable task under its id once the agent is back; restart and retryability', async () => {
      const resumable = `orca-resume-${storeType}`;
      const second = await stack.addAgent({ agentId: 'agent-2', accounts: [{ name: resumable }] });
      await second.stop();
      await waitFor('the account to lose its agent', async () => {
        const a = await stack.get<Obj>(`/armory/accounts/${resumable}`);
        return a.body.state === 'ORPHANED';
      });
      const configMap = (name: string) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name },
        data: { a: '1' },
      });

      // Two tasks fail the honest way: nobody holds the account within the agent wait.
      const failedA = await ops.waitTask(await ops.submit(deploy(resumable, [configMap('resume-a')], { app: 'shop' })));
      // B's first operation is for the account whose agent is up: it succeeds, the second one fails.
      const failedB = await ops.waitTask(
        await ops.submit([
          ...deploy(account, [configMap('resume-first')], { app: 'shop' }),
          ...deploy(resumable, [configMap('resume-b')], { app: 'shop' }),
        ]),
      );
      for (const t of [failedA, failedB]) {
        expect(t.status).toMatchObject({ completed: true, failed: true, retryable: true });
        expect(t.history.at(-1)!.status).toMatch(new RegExp(`no agent holds account ${resumable}`));
      }

      // PATCH {"retry": false} fails the task as not retryable (Clouddriver's task.fail); it cannot be resumed then.
      const patched = await request('PATCH', `/kubernetes/task/${failedA.id}`, { retry: false });
      expect(patched).toMatchObject({ status: 200, body: { id: failedA.id } });
      expect((await ops.task(failedA.id)).status).toMatchObject({ failed: true, retryable: false });
      // A caller who may not write the task's account is refused before anything else is said.
      const forbidden = await request('POST', `/task/${failedB.id}:resume`, undefined, {
        'X-SPINNAKER-ACCOUNTS': account,
      });
      expect(forbidden).toMatchObject({ status: 403, body: { code: 'SA_ERR_FORBIDDEN' } });
      const refused = await request('POST', `/task/${failedA.id}:resume`);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({
        code: 'SA_ERR_CONFLICT',
        message: expect.stringMatching(/cannot be resumed/),
      });
      expect((await request('PATCH', `/kubernetes/task/${failedA.id}`, { retry: 'no' })).status).toBe(400);
      expect((await request('PATCH', `/kubernetes/task/${failedA.id}`, { retryable: true })).status).toBe(400);

      const back = await stack.addAgent({ agentId: 'agent-2', accounts: [{ name: resumable }] });
      try {
        await waitFor('the account to be held again', async () => {
          const a = await stack.get<Obj>(`/armory/accounts/${resumable}`);
          return a.body.state === 'ACTIVE';
        });
        const resumed = await request('POST', `/task/${failedB.id}:resume`);
        expect(resumed).toMatchObject({ status: 200, body: { id: failedB.id, resourceUri: `/task/${failedB.id}` } });
        const done = await ops.waitTask(failedB.id);
        expect(done.status).toMatchObject({ completed: true, failed: false, retryable: false });
        // Only the operation that failed ran again; the first one's result stayed.
        expect(done.history.map((h) => h.status)).toContain('Resuming task from operation 2 of 2');
        expect(done.history.filter((h) => h.status.startsWith(`Sent deployManifest to agent agent-1`))).toHaveLength(1);
        expect(done.resultObjects.some((r) => r.type === 'EXCEPTION')).toBe(false);
        expect(done.resultObjects.map((r) => r.manifestNamesByNamespace)).toEqual([
          { [stack.ns]: ['configMap resume-first-v000'] },
          { [stack.ns]: ['configMap resume-b-v000'] },
        ]);
        expect((await stack.get<Obj>(`/armory/agent/operations/${failedB.id}.1`)).body).toMatchObject({
          state: 'succeeded',
          agentId: 'agent-2',
        });
        expect(await exists(['configmap', 'resume-b-v000', '-n', stack.ns])).toBe(true);
        // A succeeded task has nothing to resume.
        expect((await request('POST', `/task/${failedB.id}:resume`)).status).toBe(409);

        // Orca's forced retry: {"retry": true} makes the task retryable again, then restart (restartTaskViaOperations)
        // runs the operations it is given under the task's id.
        const retried = await request('PATCH', `/kubernetes/task/${failedA.id}`, { retry: true });
        expect(retried).toMatchObject({ status: 200, body: { id: failedA.id } });
        expect((await ops.task(failedA.id)).status).toMatchObject({ failed: true, retryable: true });
        const restarted = await request(
          'POST',
          `/kubernetes/task/${failedA.id}/restart`,
          deploy(resumable, [configMap('resume-a')], { app: 'shop' }),
        );
        expect(restarted).toMatchObject({ status: 200, body: { id: failedA.id } });
        const again = await ops.waitTask(failedA.id);
        expect(again.status).toMatchObject({ completed: true, failed: false });
        expect(again.history.map((h) => h.status)).toContain('Restarting task with 1 operation(s)');
        expect(await exists(['configmap', 'resume-a-v000', '-n', stack.ns])).toBe(true);
        const badRestart = await request('POST', `/kubernetes/task/${failedA.id}/restart`, [{ nope: {} }]);
        expect(badRestart.status).toBe(400);
      } finally {
        await back.stop();
      }

      for (const [method, path] of [
        ['POST', '/task/no-such-task:resume'],
        ['PATCH', '/kubernetes/task/no-such-task'],
      ] as const) {
        const r = await request(method, path, method === 'PATCH' ? { retry: true } : undefined);
        expect(r.status, path).toBe(404);
        expect(r.body, path).toMatchObject({ code: 'SA_ERR_NOT_FOUND', message: 'Task not found (id: no-such-task)' });
      }
    });

    it("answers a Job's status and property file before it has pods, and cancels it with DELETE", async () => {
      // Suspended: the Job controller creates no pod, whatever nodes the control plane has.
      const t = await ops.run([
        {
          runJob: {
            credentials: account,
            cloudProvider: 'kubernetes',
            application: 'calc',
            namespace: stack.ns,
            manifest: {
              apiVersion: 'batch/v1',
              kind: 'Job',
              metadata: { generateName: 'props-' },
              spec: {
                suspend: true,
                template: {
                  spec: { restartPolicy: 'Never', containers: [{ name: 'props', image: 'busybox:1.36' }] },
                },
              },
            },
          },
        },
      ]);
      const jobName = (t.resultObjects[0]?.deployedNamesByLocation[stack.ns] as string[])[0]!.slice('job '.length);
      const jobPath = `/applications/calc/jobs/${account}/${stack.ns}/${encodeURIComponent(`job ${jobName}`)}`;

      const status = await stack.get<Obj>(jobPath);
      expect(status.status).toBe(200);
      expect(status.body).toMatchObject({ name: jobName, jobState: 'Running', pods: [] });
      expect(status.body).not.toHaveProperty('failureDetails');

      const props = await stack.get<Obj>(`${jobPath}/props`);
      expect(props.status).toBe(404);
      expect(props.body).toMatchObject({ code: 'SA_ERR_NOT_FOUND', message: expect.stringMatching(/has no pod yet/) });

      const notYours = await request('DELETE', jobPath, undefined, { 'X-SPINNAKER-ACCOUNTS': 'other' });
      expect(notYours).toMatchObject({ status: 403, body: { code: 'SA_ERR_FORBIDDEN' } });
      expect((await request('GET', jobPath, undefined, { 'X-SPINNAKER-ACCOUNTS': 'other' })).status).toBe(200);
      const cancel = await request('DELETE', jobPath);
      expect(cancel.status).toBe(200);
      const deleted = await ops.waitTask(cancel.body.id as string);
      expect(deleted.status).toMatchObject({ completed: true, failed: false });
      expect(deleted.resultObjects[0]?.manifestNamesByNamespace).toEqual({ [stack.ns]: [`job ${jobName}`] });
      await waitFor('the Job to be gone', async () => !(await exists(['job', jobName, '-n', stack.ns])));
      expect((await stack.get<Obj>(jobPath)).status).toBe(404);
      expect((await request('DELETE', jobPath)).status).toBe(404);
    });

    it("reads a pod's property file through the agent; a missing pod is a 404", async () => {
      // No scheduler runs here, so the pod is never started: the API server answers its log as empty, which is an
      // empty property map (what Clouddriver answers too), read through the agent's liveLogs.
      await kubectl(['run', 'props-pod', '-n', stack.ns, '--image=busybox:1.36', '--restart=Never']);
      const r = await stack.get<Obj>(`/applications/calc/kubernetes/pods/${account}/${stack.ns}/props-pod/props-pod`);
      expect(r).toEqual({ status: 200, body: {} });
      const missing = await stack.get<Obj>(
        `/applications/calc/kubernetes/pods/${account}/${stack.ns}/no-such-pod/main`,
      );
      expect(missing.status).toBe(404);
      expect(missing.body).toMatchObject({
        code: 'SA_ERR_NOT_FOUND',
        message: expect.stringMatching(/cannot read the log of pod no-such-pod container main/),
      });
      const noAccount = await stack.get<Obj>(
        `/applications/calc/kubernetes/pods/nobody/${stack.ns}/props-pod/props-pod`,
      );
      expect(noAccount.status).toBe(404);
    });

    it("reads a Run Job's property file from its pod's log, and a failed Job's exit code, details and log (kwok node)", async () => {
      const log = [
        '+ ./migrate.sh --target prod',
        'Applying migration 0042_add_orders_index ... done',
        'SPINNAKER_PROPERTY_MIGRATION_VERSION=0042',
        'SPINNAKER_CONFIG_JSON={"replicas":3,"canary":{"weight":10}}',
        'migrations complete',
        '',
      ].join('\n');
      const runMigration = (labels: Record<string, string> = {}) => [
        {
          runJob: {
            credentials: account,
            cloudProvider: 'kubernetes',
            application: 'calc',
            namespace: stack.ns,
            manifest: {
              apiVersion: 'batch/v1',
              kind: 'Job',
              metadata: { generateName: 'migrate-' },
              spec: {
                backoffLimit: 0,
                template: {
                  metadata: { labels },
                  spec: {
                    nodeName: `kwok-${stack.ns}`,
                    restartPolicy: 'Never',
                    containers: [{ name: 'migrate', image: 'registry.example.com/migrate:1' }],
                  },
                },
              },
            },
          },
        },
      ];
      const node = await KwokNode.start({
        dir: join(stack.dir, 'kwok'),
        name: `kwok-${stack.ns}`,
        logs: [{ namespace: stack.ns, containers: ['migrate'], text: log }],
      });
      try {
        const t = await ops.run(runMigration());
        const jobName = (t.resultObjects[0]?.deployedNamesByLocation[stack.ns] as string[])[0]!.slice('job '.length);
        const jobPath = `/applications/calc/jobs/${account}/${stack.ns}/${encodeURIComponent(`job ${jobName}`)}`;
        // WaitOnJobCompletion's view: the pod appears, runs, and the Job finishes.
        const status = await waitFor('the Job to succeed with its pod', async () => {
          const r = await stack.get<Obj>(jobPath);
          return r.body.jobState === 'Succeeded' && r.body.mostRecentPodName ? r.body : undefined;
        });
        const expected = { migration_version: '0042', replicas: 3, canary: { weight: 10 } };
        expect(await stack.get<Obj>(`${jobPath}/migrate`)).toEqual({ status: 200, body: expected });
        const pod = status.mostRecentPodName as string;
        expect(
          await stack.get<Obj>(`/applications/calc/kubernetes/pods/${account}/${stack.ns}/${pod}/migrate`),
        ).toEqual({
          status: 200,
          body: expected,
        });
        // A container the pod does not have: the API server's refusal, not a 500.
        const wrong = await stack.get<Obj>(`${jobPath}/nope`);
        expect(wrong.status).toBe(400);
        expect(wrong.body.message).toMatch(/cannot read the log of pod .* container nope/);

        // A Job whose pod fails: WaitOnJobCompletion sees Failed with the exit code, the details and the log.
        const f = await ops.run(runMigration({ exitcode: '3' }));
        const failedName = (f.resultObjects[0]?.deployedNamesByLocation[stack.ns] as string[])[0]!.slice('job '.length);
        const failed = await waitFor('the Job to fail', async () => {
          const r = await stack.get<Obj>(`/applications/calc/jobs/${account}/${stack.ns}/job%20${failedName}`);
          // The pod's failure reaches the cache around the Job's Failed condition; wait for both.
          return r.body.jobState === 'Failed' && r.body.exitCode !== undefined ? r.body : undefined;
        });
        expect(failed).toMatchObject({
          exitCode: 3,
          completionDetails: { exitCode: '3', reason: 'BackoffLimitExceeded' },
          failureDetails: expect.stringMatching(/container migrate exited with code 3, reason Error/),
        });
        expect(failed.logs).toBe(log);
      } finally {
        await node.stop();
      }
    });
  });
}

describe('Orca routes: a task resumed on another replica', () => {
  const account = 'orca-xr';
  const stack = useStack({
    name: 'orca-xr',
    store: 'mysql',
    replicas: 2,
    server: {
      extra: { accounts: { gracePeriodSeconds: 120, leaseSeconds: 3 }, operations: { agentWaitSeconds: 2 } },
    },
  });

  const agentFor = (serverAddress: string) =>
    stack.addAgent({ serverAddress, accounts: [{ name: account, kinds: ['ConfigMap'] }] });

  /** Until `server` sees the account in `state` (replicas learn about peers' accounts from the shared leases). */
  const accountState = (server: PluginServerProcess, state: string) =>
    waitFor(`${server.httpBase} to see ${account} ${state}`, async () => {
      const r = await server.get<Obj>(`/armory/accounts/${account}`);
      return r.body?.state === state;
    });

  it('fails on one replica while the agent is away, resumes through the other once it is back', async () => {
    const [a, b] = stack.pair;
    const { ns } = stack;
    const first = await agentFor(a.grpcAddress);
    await accountState(b, 'ACTIVE');
    await first.stop();
    await accountState(a, 'ORPHANED');

    const body = [
      {
        deployManifest: {
          account,
          moniker: { app: 'xr' },
          namespaceOverride: ns,
          manifests: [{ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'xr' }, data: { a: '1' } }],
        },
      },
    ];
    const failed = await new OpsClient(a).waitTask(await new OpsClient(a).submit(body));
    expect(failed.status).toMatchObject({ failed: true, retryable: true });

    await agentFor(a.grpcAddress);
    await accountState(b, 'ACTIVE');

    // Posted to B, which holds no agent: B takes the task over and forwards its operation to A.
    const res = await fetch(`${b.httpBase}/task/${failed.id}:resume`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: failed.id, resourceUri: `/task/${failed.id}` });
    const done = await new OpsClient(b).waitTask(failed.id);
    expect(done.status).toMatchObject({ completed: true, failed: false });
    // Both replicas read the one task from the shared store (B answers from its running copy first, so A sees the
    // completion once B's write lands).
    expect((await new OpsClient(a).waitTask(failed.id)).status).toMatchObject({ completed: true, failed: false });
    const lines = done.history.map((h) => h.status);
    expect(lines).toContain('Resuming task from operation 1 of 1');
    expect(lines.filter((l) => l.startsWith('Sent deployManifest to agent agent-1'))).toHaveLength(1);
    const { stdout } = await kubectl(['get', 'configmap', 'xr-v000', '-n', ns, '-o', 'jsonpath={.data.a}']);
    expect(stdout).toBe('1');
    // A second resume, at either replica, finds nothing to resume.
    expect((await fetch(`${a.httpBase}/task/${failed.id}:resume`, { method: 'POST' })).status).toBe(409);
  });
});
