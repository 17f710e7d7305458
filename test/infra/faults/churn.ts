/**
 * The world changing under the system: creates, updates and deletes of ConfigMaps, Secrets, Services and Widgets (a
 * CRD) across the rig's namespaces, written straight to the API server, one at a time as fast as it answers. Writes
 * that fail while the API server or etcd is down are counted and skipped: the cache is compared with what the API
 * server holds afterwards, not with what the churn meant to write.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { kubeRequest, objectPath } from './kube-raw.js';
import { WIDGET_GROUP } from './rig.js';

interface KindSpec {
  apiVersion: string;
  kind: string;
  body(i: number): Record<string, unknown>;
}

const KINDS: KindSpec[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', body: (i) => ({ data: { round: String(i) } }) },
  { apiVersion: 'v1', kind: 'Secret', body: (i) => ({ stringData: { round: String(i) } }) },
  {
    apiVersion: 'v1',
    kind: 'Service',
    body: (i) => ({ spec: { ports: [{ port: 80 + (i % 100), protocol: 'TCP' }], selector: { app: 'churn' } } }),
  },
  { apiVersion: `${WIDGET_GROUP}/v1`, kind: 'Widget', body: (i) => ({ spec: { round: i } }) },
];

export interface ChurnStats {
  writes: number;
  failed: number;
}

export class Churn {
  private readonly live = new Map<string, { kind: KindSpec; namespace: string; name: string }>();
  private running = false;
  private loop?: Promise<void>;
  private seq = 0;
  readonly stats: ChurnStats = { writes: 0, failed: 0 };

  constructor(
    private readonly kc: KubeConfig,
    private readonly namespaces: string[],
    /** Pause between writes; 0 writes as fast as the API server answers. */
    private readonly pauseMs = 10,
  ) {}

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loop;
  }

  private async run(): Promise<void> {
    while (this.running) {
      await this.step().then(
        () => (this.stats.writes += 1),
        () => (this.stats.failed += 1),
      );
      if (this.pauseMs) await sleep(this.pauseMs);
    }
  }

  /** Grows to ~40 objects per kind, then updates twice as often as it creates or deletes. */
  private async step(): Promise<void> {
    const i = this.seq++;
    const r = Math.random();
    const existing = [...this.live.values()];
    if (existing.length < 40 * KINDS.length && (r < 0.4 || existing.length === 0)) {
      const kind = KINDS[i % KINDS.length]!;
      const namespace = this.namespaces[i % this.namespaces.length]!;
      const name = `churn-${i}`;
      await kubeRequest(
        this.kc,
        'POST',
        objectPath(kind.apiVersion, kind.kind, namespace),
        this.object(kind, namespace, name, i),
      );
      this.live.set(`${kind.kind}/${namespace}/${name}`, { kind, namespace, name });
    } else if (r < 0.8) {
      const o = existing[Math.floor(Math.random() * existing.length)]!;
      await kubeRequest(
        this.kc,
        'PATCH',
        objectPath(o.kind.apiVersion, o.kind.kind, o.namespace, o.name),
        o.kind.body(i),
        'application/merge-patch+json',
      );
    } else {
      const o = existing[Math.floor(Math.random() * existing.length)]!;
      this.live.delete(`${o.kind.kind}/${o.namespace}/${o.name}`);
      await kubeRequest(this.kc, 'DELETE', objectPath(o.kind.apiVersion, o.kind.kind, o.namespace, o.name));
    }
  }

  private object(kind: KindSpec, namespace: string, name: string, i: number): Record<string, unknown> {
    return { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name, namespace }, ...kind.body(i) };
  }
}
