/**
 * The Spinnaker-shaped workload of the views benchmarks: per account 50 ReplicaSets (one server group of each of
 * 50 applications) with 2 Running Pods each, 50 Services, and ConfigMaps up to `objectsPerAccount`. Applications
 * repeat per block of `accountsPerBlock` accounts, so each application has one server group in each of 100 accounts
 * of its block: a view's answer keeps its size however many blocks the cache holds.
 */
import type { FakeObject } from '../fake-agents/fake-agent.js';
import { configMapJson } from './objects.js';

const RS = { group: 'apps', version: 'v1', kind: 'ReplicaSet', resource: 'replicasets', namespaced: true };
const POD = { group: '', version: 'v1', kind: 'Pod', resource: 'pods', namespaced: true };
const SVC = { group: '', version: 'v1', kind: 'Service', resource: 'services', namespaced: true };
const CM = { group: '', version: 'v1', kind: 'ConfigMap', resource: 'configmaps', namespaced: true };
const created = '2026-01-01T00:00:00Z';
const json = (o: unknown) => Buffer.from(JSON.stringify(o));

export const SG_PER_ACCOUNT = 50;

export class SpinnakerWorkload {
  /** Applications per block: each has one server group in each of 100 accounts (fewer in a smaller block). */
  readonly appsPerBlock: number;
  private readonly accountIndex = new Map<string, number>();

  constructor(
    private readonly accountsPerBlock: number,
    readonly objectsPerAccount = 1000,
  ) {
    this.appsPerBlock = Math.max(1, (accountsPerBlock * SG_PER_ACCOUNT) / 100);
  }

  /** Accounts are numbered in the order first seen; register them in the agents' order for a stable layout. */
  indexOf(account: string): number {
    let i = this.accountIndex.get(account);
    if (i === undefined) this.accountIndex.set(account, (i = this.accountIndex.size));
    return i;
  }

  reset(): void {
    this.accountIndex.clear();
  }

  private appOf(a: number, j: number): string {
    const block = Math.floor(a / this.accountsPerBlock);
    return `app${block * this.appsPerBlock + (((a % this.accountsPerBlock) * SG_PER_ACCOUNT + j) % this.appsPerBlock)}`;
  }

  /** 50 ReplicaSets of 50 applications with 2 Running Pods each, 50 Services, and ConfigMaps up to objectsPerAccount. */
  objects(account: string): FakeObject[] {
    const a = this.indexOf(account);
    const out: FakeObject[] = [];
    const ns = 'bench';
    for (let j = 0; j < SG_PER_ACCOUNT; j++) {
      const app = this.appOf(a, j);
      const name = `${app}-web-v${String(a % 1000).padStart(3, '0')}`;
      const uid = `${account}-rs-${j}`;
      const annotations = {
        'moniker.spinnaker.io/application': app,
        'moniker.spinnaker.io/cluster': `replicaSet ${app}-web`,
        'traffic.spinnaker.io/load-balancers': `["service ${app}-svc"]`,
      };
      out.push({
        kind: RS,
        namespace: ns,
        name,
        uid,
        json: json({
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          metadata: { name, namespace: ns, uid, creationTimestamp: created, annotations, labels: { tier: app } },
          spec: {
            replicas: 2,
            selector: { matchLabels: { tier: app } },
            template: {
              metadata: { labels: { tier: app }, annotations },
              spec: { containers: [{ name: 'main', image: `registry.example.com/${app}:1.0.${a}` }] },
            },
          },
          status: { replicas: 2, readyReplicas: 2, availableReplicas: 2 },
        }),
      });
      for (let p = 0; p < 2; p++) {
        const pod = `${name}-p${p}`;
        out.push({
          kind: POD,
          namespace: ns,
          name: pod,
          uid: `${uid}-pod-${p}`,
          json: json({
            apiVersion: 'v1',
            kind: 'Pod',
            metadata: {
              name: pod,
              namespace: ns,
              uid: `${uid}-pod-${p}`,
              creationTimestamp: created,
              labels: { tier: app },
              annotations,
              ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name, uid, controller: true }],
            },
            spec: { containers: [{ name: 'main', image: `registry.example.com/${app}:1.0.${a}` }] },
            status: { phase: 'Running', containerStatuses: [{ name: 'main', ready: true }] },
          }),
        });
      }
      const svc = `${app}-svc`;
      out.push({
        kind: SVC,
        namespace: ns,
        name: svc,
        uid: `${account}-svc-${j}`,
        json: json({
          apiVersion: 'v1',
          kind: 'Service',
          metadata: {
            name: svc,
            namespace: ns,
            uid: `${account}-svc-${j}`,
            creationTimestamp: created,
            annotations: { 'moniker.spinnaker.io/application': app },
          },
          spec: { selector: { tier: app }, ports: [{ port: 80 }] },
        }),
      });
    }
    for (let i = out.length; i < this.objectsPerAccount; i++) {
      const name = `cm-${i}`;
      out.push({
        kind: CM,
        namespace: ns,
        name,
        uid: `${account}-${name}`,
        json: configMapJson({ namespace: ns, name, resourceVersion: '1', bytes: 600 }),
      });
    }
    return out;
  }

  /** The same number of objects, all ConfigMaps of the workload's average size: nothing for the index. */
  plain(account: string): FakeObject[] {
    const objects = this.objects(account);
    const bytes = Math.round(objects.reduce((n, o) => n + o.json.length, 0) / objects.length);
    return objects.map((o, i) => {
      const name = `plain-${i}`;
      return {
        kind: CM,
        namespace: 'bench',
        name,
        uid: `${account}-${name}`,
        json: configMapJson({ namespace: 'bench', name, resourceVersion: '1', bytes }),
      };
    });
  }
}
