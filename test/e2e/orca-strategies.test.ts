/**
 * Orca's rollout strategies on an agent account, call by call as Orca's DeployManifestStage and its appended stages
 * make them (red/black, highlander, a dynamic-target scale), against the real plugin-server and agent and the real
 * control plane. Stages wait for `status.stable`, which needs Pods that run: a kwok node (test/infra/kwok.ts) runs
 * them, so every wait below is the one Orca makes (WaitForManifestStableTask polling GET /manifests).
 *
 * Orca sends `trafficManagement.options` as the operation's top-level `services` and `enableTraffic`; after the
 * deploy it lists the cluster (`GET /manifests/{account}/{ns}/{kind}/cluster/{app}/{cluster}`), checks the old
 * versions (`GET /manifests/...?includeEvents=false`) and appends disableManifest (red/black, highlander) and
 * deleteManifest (highlander) stages for every version it did not just deploy.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { kubectl, waitFor } from '../infra/index.js';
import { KwokNode } from '../infra/kwok.js';
import { replicaSet } from '../infra/manifests.js';
import { useStack } from '../infra/stack.js';
import { OpsClient, type Obj } from './operations-helpers.js';

describe('Orca rollout strategies on an agent account (kwok node runs the Pods)', () => {
  const stack = useStack({ name: 'strategies', store: 'memory' });
  const ops = new OpsClient(stack);
  const account = 'strategies';
  const enc = encodeURIComponent;

  const onNode = (name: string, image: string, replicas = 2) =>
    replicaSet(name, { app: name }, replicas, { nodeName: `kwok-${stack.ns}`, containers: [{ name: 'main', image }] });

  /** DeployManifestTask's body for a stage with traffic management on. */
  const deployWithTraffic = (name: string, image: string, strategy: string) => [
    {
      deployManifest: {
        account,
        cloudProvider: 'kubernetes',
        moniker: { app: 'shop' },
        namespaceOverride: stack.ns,
        source: 'text',
        manifests: [onNode(name, image)],
        trafficManagement: { enabled: true, options: { enableTraffic: true, services: [`service ${name}`], strategy } },
        services: [`service ${name}`],
        enableTraffic: true,
      },
    },
  ];

  /** The disableManifest stage Orca appends for an old version (red/black, highlander). */
  const disableVersion = (name: string) => [
    { disableManifest: { account, cloudProvider: 'kubernetes', location: stack.ns, manifestName: name, app: 'shop' } },
  ];

  /** WaitForManifestStableTask: poll until status.stable (failed first, as Orca checks it). */
  const waitStable = async (name: string) =>
    waitFor(`${name} stable`, async () => {
      const r = await ops.manifest(account, stack.ns, name);
      if (r.status !== 200) return undefined;
      expect(r.body.status.failed.state, JSON.stringify(r.body.status)).toBe(false);
      return r.body.status.stable.state === true ? r.body : undefined;
    });

  /** The cluster route Orca's DeployManifestStage reads for its afterStages. */
  const cluster = async (name: string): Promise<string[]> => {
    const r = await stack.get<Obj[]>(
      `/manifests/${account}/${stack.ns}/replicaSet/cluster/shop/${enc(`replicaSet ${name}`)}`,
    );
    expect(r.status).toBe(200);
    for (const c of r.body) expect(c).toMatchObject({ kind: 'replicaSet', namespace: stack.ns });
    // Coordinates name the object bare; Orca's appended stages name it `${kind} ${name}`.
    return r.body.map((c) => `${c.kind as string} ${c.name as string}`).sort();
  };

  const endpointsOf = async (service: string): Promise<string[]> => {
    const { stdout } = await kubectl(['get', 'pods', '-n', stack.ns, '-o', 'json']);
    const svc = JSON.parse((await kubectl(['get', 'service', service, '-n', stack.ns, '-o', 'json'])).stdout) as Obj;
    const selector = svc.spec.selector as Record<string, string>;
    return (JSON.parse(stdout).items as Obj[])
      .filter((p) => Object.entries(selector).every(([k, v]) => p.metadata.labels?.[k] === v))
      .map((p) => (p.metadata.ownerReferences as Obj[])[0]!.name as string)
      .filter((v, i, a) => a.indexOf(v) === i)
      .sort();
  };

  beforeAll(async () => {
    const node = await KwokNode.start({ dir: join(stack.dir, 'kwok'), name: `kwok-${stack.ns}`, logs: [] });
    stack.defer(() => node.stop());
    await stack.addAgent({ accounts: [{ name: account }] });
    for (const name of ['web', 'api']) {
      await ops.run([
        {
          deployManifest: {
            account,
            cloudProvider: 'kubernetes',
            moniker: { app: 'shop' },
            namespaceOverride: stack.ns,
            manifests: [
              {
                apiVersion: 'v1',
                kind: 'Service',
                metadata: { name },
                spec: { selector: { 'serves-traffic': name }, ports: [{ port: 80 }] },
              },
            ],
          },
        },
      ]);
    }
  }, 120_000);

  it('red/black: v001 takes the traffic, v000 is disabled and stays, scaled as it was', async () => {
    // The Service selects serves-traffic=web; traffic management adds that label to each version's pod template.
    const deploy = (image: string) => deployWithTraffic('web', image, 'redblack');
    const first = await ops.run(deploy('registry.example.com/web:1'));
    expect(first.resultObjects[0]?.manifestNamesByNamespace).toEqual({ [stack.ns]: ['replicaSet web-v000'] });
    await waitStable('replicaSet web-v000');
    const second = await ops.run(deploy('registry.example.com/web:2'));
    expect(second.resultObjects[0]?.manifestNamesByNamespace).toEqual({ [stack.ns]: ['replicaSet web-v001'] });
    const deployed = await waitStable('replicaSet web-v001');
    expect(deployed.manifest.status.readyReplicas).toBe(2);

    // afterStages: every version but the one just deployed is disabled.
    const versions = await cluster('web');
    expect(versions).toEqual(['replicaSet web-v000', 'replicaSet web-v001']);
    const old = versions.filter((v) => v !== 'replicaSet web-v001');
    for (const name of old) {
      const m = await ops.manifest(account, stack.ns, name);
      expect(m.body.manifest.status.readyReplicas).toBe(2);
      await ops.run(disableVersion(name));
    }
    // The Service's selector now matches v001's Pods only; v000 still runs, and Deck shows it disabled.
    await waitFor('the Service selects v001 only', async () => {
      const svc = JSON.parse((await kubectl(['get', 'service', 'web', '-n', stack.ns, '-o', 'json'])).stdout) as Obj;
      const selector = svc.spec.selector as Record<string, string>;
      const rs0 = JSON.parse((await kubectl(['get', 'rs', 'web-v000', '-n', stack.ns, '-o', 'json'])).stdout) as Obj;
      const labels = rs0.spec.template.metadata.labels as Record<string, string>;
      return !Object.entries(selector).every(([k, v]) => labels[k] === v);
    });
    const v000 = await stack.get<Obj>(`/serverGroups/${account}/${stack.ns}/${enc('replicaSet web-v000')}`);
    const v001 = await stack.get<Obj>(`/serverGroups/${account}/${stack.ns}/${enc('replicaSet web-v001')}`);
    expect(v000.body).toMatchObject({ disabled: true, capacity: { desired: 2 } });
    expect(v001.body).toMatchObject({ disabled: false, loadBalancers: ['service web'] });
  });

  it('highlander: after v002, every older version is disabled and deleted; only v002 remains', async () => {
    const deploy = (image: string) => deployWithTraffic('api', image, 'highlander');
    await ops.run(deploy('registry.example.com/api:1'));
    await waitStable('replicaSet api-v000');
    await ops.run(deploy('registry.example.com/api:2'));
    await waitStable('replicaSet api-v001');
    await ops.run(deploy('registry.example.com/api:3'));
    await waitStable('replicaSet api-v002');
    const versions = await cluster('api');
    expect(versions).toEqual(['replicaSet api-v000', 'replicaSet api-v001', 'replicaSet api-v002']);
    for (const name of versions.filter((v) => v !== 'replicaSet api-v002')) {
      await ops.run(disableVersion(name));
      await ops.run([
        {
          deleteManifest: {
            account,
            cloudProvider: 'kubernetes',
            location: stack.ns,
            manifestName: name,
            app: 'shop',
            options: { cascading: true },
          },
        },
      ]);
    }
    expect(await cluster('api')).toEqual(['replicaSet api-v002']);
    const { stdout } = await kubectl(['get', 'rs', '-n', stack.ns, '-o', 'name']);
    expect(stdout.split('\n').filter((l) => l.includes('api-'))).toEqual(['replicaset.apps/api-v002']);
    await waitFor('only v002 pods serve the Service', async () => (await endpointsOf('api')).join() === 'api-v002');
  });

  it('a dynamic target: scale the oldest version of the cluster, as ResolveTargetManifestTask resolves it', async () => {
    const r = await stack.get<Obj>(
      `/manifests/${account}/${stack.ns}/replicaSet/cluster/shop/${enc('replicaSet web')}/dynamic/oldest`,
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ kind: 'replicaSet', name: 'web-v000', namespace: stack.ns });
    await ops.run([
      {
        scaleManifest: {
          account,
          cloudProvider: 'kubernetes',
          location: stack.ns,
          manifestName: `${r.body.kind as string} ${r.body.name as string}`,
          replicas: 0,
          app: 'shop',
        },
      },
    ]);
    const rs = JSON.parse((await kubectl(['get', 'rs', 'web-v000', '-n', stack.ns, '-o', 'json'])).stdout) as Obj;
    expect(rs.spec.replicas).toBe(0);
    const newest = await stack.get<Obj>(
      `/manifests/${account}/${stack.ns}/replicaSet/cluster/shop/${enc('replicaSet web')}/dynamic/newest`,
    );
    expect(newest.body.name).toBe('web-v001');
  });
});
