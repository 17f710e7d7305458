/**
 * A replicated install under test: plugin-server replicas on one MariaDB, each through its own Toxiproxy link to it
 * (so one replica's link can be cut) and with a clock that can be skewed (faketime.ts), HAProxy in front of them (the
 * Service), agent groups of real agent processes connecting through HAProxy, and the Widget CRD and namespaces the
 * churn writes to. The control plane and MariaDB are the test run's (CI) or private ones (bench/faults.ts).
 *
 * Agents belong to a round (one seed): each round registers accounts and agents of its own names, so rounds share the
 * replicas without sharing state.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import type { CacheCheckOptions } from '../cache-checker.js';
import { ControlPlane } from '../control-plane.js';
import { Churn } from '../faults/churn.js';
import { CHECKED_KINDS, installWidgetCrd, WIDGET_GROUP } from '../faults/rig.js';
import { Haproxy } from '../haproxy.js';
import { resolveK8sBinDir } from '../k8s-tools.js';
import { createDatabase, MariaDb } from '../mariadb.js';
import { AgentProcess, PluginServerProcess } from '../processes.js';
import { Toxiproxy } from '../toxiproxy.js';
import { ClockSkew } from './faketime.js';

export interface ReplicaRigOptions {
  dir: string;
  replicas: number;
  /** An admin kubeconfig of a running control plane, or 'private' (one of its own). */
  controlPlane: 'private' | { kubeconfig: string };
  /** A running MariaDB server's URL (a database is created on it), or 'private'. */
  mariadb: 'private' | { serverUrl: string };
  leaseSeconds: number;
  /** ORPHANED accounts are removed (cache and all) after this. */
  gracePeriodSeconds: number;
}

export interface Replica {
  name: string;
  server: PluginServerProcess;
  skew: ClockSkew;
  /** The Toxiproxy proxy on its MySQL link. */
  link: string;
  /** The schedule is doing something to it (killed, restarting, link cut); the checker does not judge it meanwhile. */
  disturbed: boolean;
}

export interface AgentSpec {
  agentId: string;
  account: string;
  /** The admin kubeconfig, or one through another address (another cluster, as far as the protocol can tell). */
  kubeconfigFile: string;
}

export class ReplicaRig {
  cp?: ControlPlane;
  mariadb?: MariaDb;
  toxiproxy!: Toxiproxy;
  lb!: Haproxy;
  readonly replicas: Replica[] = [];
  kubeconfig!: string;
  /** A kubeconfig whose server is another address of the same API server (the impostor's cluster). */
  otherClusterKubeconfig!: string;
  /** host:port of the API server as the agents see it, and as the impostor sees it. */
  apiHost!: string;
  otherApiHost!: string;
  namespaces: string[] = [];
  /** The world changing under the install (every round shares it: its object names run on across rounds). */
  churn!: Churn;
  private dropDb?: () => Promise<void>;
  private readonly agents = new Map<string, AgentProcess>();

  private constructor(readonly opts: ReplicaRigOptions) {}

  static async start(opts: ReplicaRigOptions): Promise<ReplicaRig> {
    const rig = new ReplicaRig(opts);
    try {
      await rig.setUp();
    } catch (e) {
      await rig.stop();
      throw e;
    }
    return rig;
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfig);
    return kc;
  }

  private async setUp(): Promise<void> {
    const { dir } = this.opts;
    mkdirSync(dir, { recursive: true });
    const binDir = await resolveK8sBinDir();
    if (this.opts.controlPlane === 'private') {
      this.cp = await ControlPlane.start({ dir: join(dir, 'cp'), binDir });
      this.kubeconfig = this.cp.kubeconfig;
    } else this.kubeconfig = this.opts.controlPlane.kubeconfig;
    this.toxiproxy = await Toxiproxy.start(dir, binDir);

    const adminYaml = readFileSync(this.kubeconfig, 'utf8');
    const apiHost = /server: https:\/\/([^\s/]+)/.exec(adminYaml)?.[1];
    if (!apiHost) throw new Error(`${this.kubeconfig}: no https server URL`);
    this.apiHost = apiHost;
    // The same API server through another address: the protocol tells clusters apart by host and CA, so an agent
    // using this one is another cluster claiming the same account name. TLS still verifies (valid for 127.0.0.1).
    this.otherApiHost = await this.toxiproxy.createProxy('other-cluster', apiHost);
    this.otherClusterKubeconfig = join(dir, 'other-cluster-kubeconfig');
    writeFileSync(
      this.otherClusterKubeconfig,
      adminYaml.replace(`https://${apiHost}`, `https://${this.otherApiHost}`),
      {
        mode: 0o600,
      },
    );

    await installWidgetCrd(this.kubeConfig());
    const api = KubernetesObjectApi.makeApiClient(this.kubeConfig());
    const suffix = Math.random().toString(36).slice(2, 7);
    for (let i = 0; i < 2; i++) {
      const name = `schedules-${suffix}-${i}`;
      await api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      this.namespaces.push(name);
    }

    // A write every 50 ms or so: changes flow through every fault, without taking the two cores from the replicas.
    this.churn = new Churn(this.kubeConfig(), this.namespaces, 50);

    let serverUrl: string;
    if (this.opts.mariadb === 'private') {
      this.mariadb = await MariaDb.start({ durable: true });
      serverUrl = this.mariadb.url;
    } else serverUrl = this.opts.mariadb.serverUrl;
    const db = await createDatabase(serverUrl, 'schedules');
    this.dropDb = db.drop;
    const dbUrl = new URL(db.url);

    const starts: Promise<Replica>[] = [];
    for (let i = 0; i < this.opts.replicas; i++) {
      const name = `replica-${i}`;
      const link = `mysql-${i}`;
      const u = new URL(dbUrl);
      u.host = await this.toxiproxy.createProxy(link, dbUrl.host);
      const skew = ClockSkew.in(dir, name);
      starts.push(
        PluginServerProcess.start({
          dir,
          name,
          storage: { type: 'mysql', url: u.toString() },
          env: skew.env(),
          extra: {
            accounts: { gracePeriodSeconds: this.opts.gracePeriodSeconds, leaseSeconds: this.opts.leaseSeconds },
            limits: { heartbeatIntervalSeconds: 1, sessionIdleTimeoutSeconds: 5 },
            operations: { agentWaitSeconds: 20, cacheWaitSeconds: 30, timeoutSeconds: 60 },
          },
        }).then((server) => ({ name, server, skew, link, disturbed: false })),
      );
    }
    // Started at once against the empty database, as a Deployment's pods are (the migrations race).
    const settled = await Promise.allSettled(starts);
    for (const s of settled) if (s.status === 'fulfilled') this.replicas.push(s.value);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
    this.lb = await Haproxy.start({
      dir,
      backends: this.replicas.map((r, i) => ({
        name: `r${i}`,
        grpcPort: r.server.grpcPort,
        httpPort: r.server.httpPort,
      })),
    });
  }

  /** Starts an agent (not waiting for it to be ready: registering is part of what is under test). */
  async startAgent(spec: AgentSpec): Promise<AgentProcess> {
    const agent = await AgentProcess.start({
      dir: join(this.opts.dir, 'agents'),
      agentId: spec.agentId,
      serverAddress: this.lb.grpcAddress,
      accounts: [
        {
          name: spec.account,
          kubeconfigFile: spec.kubeconfigFile,
          namespaces: this.namespaces,
          kinds: ['ConfigMap', 'Secret', 'Service', `Widget.${WIDGET_GROUP}`],
        },
      ],
      extra: {
        server: {
          address: this.lb.grpcAddress,
          insecure: true,
          heartbeatSeconds: 1,
          backoff: { baseDelaySeconds: 0.2, maxDelaySeconds: 2 },
        },
      },
      waitReady: false,
    });
    this.agents.set(spec.agentId, agent);
    return agent;
  }

  agent(agentId: string): AgentProcess | undefined {
    return this.agents.get(agentId);
  }

  async stopAgent(agentId: string): Promise<void> {
    await this.agents.get(agentId)?.stop();
    this.agents.delete(agentId);
  }

  /** The cache of `account` on `replica` compared with the API server. */
  checkOptions(replica: Replica, account: string): CacheCheckOptions {
    return {
      httpBase: replica.server.httpBase,
      account,
      kubeconfig: this.kubeconfig,
      kinds: CHECKED_KINDS,
      namespaces: this.namespaces,
    };
  }

  async stop(): Promise<void> {
    await this.churn?.stop();
    for (const id of [...this.agents.keys()]) await this.stopAgent(id).catch(() => undefined);
    await this.lb?.stop().catch(() => undefined);
    for (const r of this.replicas) await r.server.stop().catch(() => undefined);
    await this.toxiproxy?.stop().catch(() => undefined);
    if (!this.cp && this.namespaces.length) {
      const api = KubernetesObjectApi.makeApiClient(this.kubeConfig());
      for (const name of this.namespaces) {
        await api.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch(() => undefined);
      }
    }
    await this.dropDb?.().catch(() => undefined);
    await this.mariadb?.stop().catch(() => undefined);
    await this.cp?.stop().catch(() => undefined);
  }
}
