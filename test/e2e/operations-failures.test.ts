/**
 * Operations when things go wrong (MySQL store): a read-only account gets a Forbidden failure naming the verb and
 * the resource; finished tasks survive a plugin-server restart; an agent killed mid-operation leaves a failed,
 * retryable task instead of a hang, and so does an account no agent holds.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import { createServiceAccount, kubectl } from '../infra/index.js';
import type { AgentProcess } from '../infra/processes.js';
import { useStack } from '../infra/stack.js';
import { OpsClient, type Obj } from './operations-helpers.js';

describe('operations: failures and restarts (mysql store)', () => {
  const stack = useStack({
    name: 'ops-fail',
    store: 'mysql',
    server: { extra: { operations: { agentWaitSeconds: 2 } } },
  });
  const ops = new OpsClient(stack);
  const writer = 'ops-writer';
  const reader = 'ops-reader';
  let agent: AgentProcess;

  beforeAll(async () => {
    const { ns } = stack;
    const readOnly = await createServiceAccount({
      namespace: ns,
      name: 'read-only',
      rules: [{ apiGroups: ['*'], resources: ['*'], verbs: ['get', 'list', 'watch'] }],
    });
    agent = await stack.addAgent({
      accounts: [
        { name: writer },
        { name: reader, kubeconfigFile: readOnly.kubeconfigPath, kinds: ['ConfigMap', 'Deployment'] },
      ],
    });
    stack.defer(() =>
      kubectl(['patch', 'configmap', 'held', '-n', ns, '--type=merge', '-p', '{"metadata":{"finalizers":null}}'], {
        allowFail: true,
      }),
    );
  });

  const configMap = (name: string, extra: Obj = {}) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, ...extra },
    data: { a: '1' },
  });
  const deploy = (account: string, manifests: object[]) => [
    { deployManifest: { account, moniker: { app: 'fail' }, namespaceOverride: stack.ns, versioned: false, manifests } },
  ];

  it('a read-only account fails with Forbidden naming the verb and the resource', async () => {
    const t = await ops.waitTask(await ops.submit(deploy(reader, [configMap('forbidden')])));
    expect(t.status).toMatchObject({ completed: true, failed: true, retryable: false });
    const last = t.history.at(-1)!.status;
    expect(last).toMatch(/^Orchestration failed: KubernetesDeployManifestOperation \| /);
    expect(last).toMatch(/forbidden/i);
    expect(last).toMatch(/cannot (patch|create)/);
    expect(last).toContain('configmaps');
    const exception = t.resultObjects.find((r) => r.type === 'EXCEPTION');
    expect(exception).toMatchObject({ type: 'EXCEPTION', operation: 'KubernetesDeployManifestOperation' });
    expect(exception?.message).toMatch(/cannot (patch|create)/);
    const got = await kubectl(['get', 'configmap', 'forbidden', '-n', stack.ns, '--ignore-not-found', '-o', 'name']);
    expect(got.stdout.trim()).toBe('');
  });

  it('finished tasks and their results survive a plugin-server restart, and so does clientRequestId', async () => {
    const requestId = `restart-${Math.random().toString(36).slice(2)}`;
    const done = await ops.run(deploy(writer, [configMap('survivor')]), requestId);
    await stack.server.restart();
    const again = await ops.task(done.id);
    expect(again.status).toEqual(done.status);
    expect(again.resultObjects).toEqual(done.resultObjects);
    expect(again.history).toEqual(done.history);
    expect(await ops.submit(deploy(writer, [configMap('survivor')]), requestId)).toBe(done.id);
    // The agent comes back on its own; operations flow again.
    await agent.waitReady();
    await ops.run(deploy(writer, [configMap('after-restart')]));
  });

  it('an agent killed mid-operation leaves a failed, retryable task, not a hang', async () => {
    // A finalizer keeps the ConfigMap around, so the delete (which waits for it to be gone) is still running.
    await ops.run(deploy(writer, [configMap('held', { finalizers: ['example.com/hold'] })]));
    const id = await ops.submit([
      { deleteManifest: { account: writer, location: stack.ns, manifestName: 'configMap held' } },
    ]);
    for (;;) {
      const pending = (await stack.server.get<Obj[]>('/armory/agent/operations')).body;
      if (pending.some((o) => o.taskId === id && o.state === 'sent')) break;
      await sleep(20);
    }
    const running = await ops.task(id);
    expect(running.status.completed).toBe(false);
    await agent.kill();

    const t = await ops.waitTask(id);
    expect(t.status).toMatchObject({ completed: true, failed: true, retryable: true });
    expect(t.history.at(-1)!.status).toMatch(/no agent holds account ops-writer after its agent disconnected/);
    expect(t.resultObjects.find((r) => r.type === 'EXCEPTION')).toMatchObject({ retryable: true });
    const op = (await stack.server.get<Obj>(`/armory/agent/operations/${id}.0`)).body;
    expect(op).toMatchObject({ state: 'failed', retryable: true, agentId: 'agent-1' });

    // With no agent at all, an operation waits for one (bounded), then fails as retryable too.
    const orphan = await ops.waitTask(await ops.submit(deploy(writer, [configMap('nobody-home')])));
    expect(orphan.status).toMatchObject({ failed: true, retryable: true });
    expect(orphan.history.at(-1)!.status).toMatch(/no agent holds account ops-writer/);
  });
});
