/**
 * The system under fault: a plugin-server and an agent as real processes, with Toxiproxy on the three links a
 * production install has (agent → plugin-server gRPC, agent → kube-apiserver, plugin-server → MariaDB), a CRD and
 * a few namespaces to churn in. The control plane and MariaDB are private (so they can be killed) or the shared
 * ones of the test run (cheaper, for faults that leave them alone).
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig, KubernetesObjectApi } from '@kubernetes/client-node';
import { waitForCacheToMatch, type CacheCheckOptions, type CacheDiff, type CheckedKind } from '../cache-checker.js';
import { ControlPlane } from '../control-plane.js';
import { testEnv } from '../index.js';
import { resolveK8sBinDir } from '../k8s-tools.js';
import { customResourceDefinition } from '../manifests.js';
import { createDatabase, MariaDb } from '../mariadb.js';
import { createPostgresDatabase, PostgresServer } from '../postgres.js';
import { AgentProcess, PluginServerProcess, type StorageSpec } from '../processes.js';
import { waitFor } from '../wait.js';
import { createAgentIdentity, deleteAgentIdentity, type AgentIdentity } from './agent-identity.js';
import { kubeRequest } from './kube-raw.js';
import { Toxiproxy } from '../toxiproxy.js';

export const WIDGET_GROUP = 'faults.scale-agent.test';
export const ACCOUNT = 'faults';

export type Link = 'grpc' | 'apiserver' | 'mysql' | 'postgres';

export interface RigOptions {
  dir: string;
  store: 'memory' | 'mysql' | 'postgres';
  /** 'private': a control plane of its own (killable); otherwise the admin kubeconfig of one that is running. */
  controlPlane: 'private' | { kubeconfig: string };
  /**
   * For the mysql store: 'private' (killable, disk can be filled, production durability) or the URL of a running
   * server.
   */
  mariadb?: 'private' | { serverUrl: string };
  /** Private MariaDB data dir on a tmpfs of this many MiB (disk-full faults); needs mount rights. */
  mariadbTmpfsMb?: number;
  namespaces?: number;
  /** Added to the agent's environment: its allocator as shipped (AGENT_ALLOCATOR_ENV), NODE_OPTIONS. */
  agentEnv?: Record<string, string>;
}

const CRD = customResourceDefinition({ group: WIDGET_GROUP, kind: 'Widget', plural: 'widgets' });

/** Creates the Widget CRD (if missing) and waits until it is served. */
export async function installWidgetCrd(kc: KubeConfig): Promise<void> {
  // Raw JSON: client-node's model would drop x-kubernetes-preserve-unknown-fields (and with it every spec).
  await kubeRequest(kc, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', CRD).catch((e: unknown) => {
    if (!String(e).includes(' 409 ')) throw e;
  });
  const api = KubernetesObjectApi.makeApiClient(kc);
  await waitFor('the Widget CRD to be served', async () => {
    const list = await api.list(`${WIDGET_GROUP}/v1`, 'Widget').catch(() => undefined);
    return list !== undefined;
  });
}

export const CHECKED_KINDS: CheckedKind[] = [
  { apiVersion: 'v1', kind: 'ConfigMap', namespaced: true },
  { apiVersion: 'v1', kind: 'Secret', namespaced: true },
  { apiVersion: 'v1', kind: 'Service', namespaced: true },
  { apiVersion: `${WIDGET_GROUP}/v1`, kind: 'Widget', namespaced: true },
];

export class FaultRig {
  cp?: ControlPlane;
  mariadb?: MariaDb;
  /**
   * The rig's own PostgreSQL server (store postgres), with production durability as the private MariaDB has: killable,
   * a SIGKILL must not lose acknowledged writes. Undefined on SCALE_AGENT_TEST_POSTGRES_URL's server.
   */
  postgresServer?: PostgresServer;
  toxiproxy!: Toxiproxy;
  server!: PluginServerProcess;
  agent!: AgentProcess;
  /** Admin kubeconfig straight to the API server (the churn and the checker use it: they are the world, not the agent). */
  kubeconfig!: string;
  namespaces: string[] = [];
  /** Who the agent is to the API server (a ServiceAccount, subject to flow control). */
  agentIdentity?: AgentIdentity;
  readonly links: Partial<Record<Link, string>> = {};
  private dropDb?: () => Promise<void>;

  private constructor(readonly opts: RigOptions) {}

  static async start(opts: RigOptions): Promise<FaultRig> {
    const rig = new FaultRig(opts);
    try {
      await rig.setUp();
    } catch (e) {
      await rig.stop();
      throw e;
    }
    return rig;
  }

  /** The rig on the test run's shared control plane (and shared MariaDB for the mysql store), in a temp dir. */
  static onSharedCluster(name: string, opts: Omit<RigOptions, 'dir' | 'controlPlane' | 'mariadb'>): Promise<FaultRig> {
    const env = testEnv();
    return FaultRig.start({
      ...opts,
      dir: mkdtempSync(join(tmpdir(), `sa-faults-${name}-`)),
      controlPlane: { kubeconfig: env.kubeconfig },
      mariadb: { serverUrl: env.mysqlUrl },
    });
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfig);
    return kc;
  }

  /** The agent's credentials straight to the API server (not through Toxiproxy): for probes as the agent. */
  agentKubeConfig(): KubeConfig {
    const kc = this.kubeConfig();
    const user = kc.getCurrentUser();
    if (!user || !this.agentIdentity) throw new Error('the rig has no agent identity yet');
    kc.users = kc.users.map((u) => (u.name === user.name ? { ...u, token: this.agentIdentity!.token } : u));
    return kc;
  }

  objectApi(): KubernetesObjectApi {
    return KubernetesObjectApi.makeApiClient(this.kubeConfig());
  }

  private async setUp(): Promise<void> {
    const { dir } = this.opts;
    mkdirSync(dir, { recursive: true });
    const binDir = await resolveK8sBinDir();
    if (this.opts.controlPlane === 'private') {
      this.cp = await ControlPlane.start({ dir: join(dir, 'cp'), binDir });
      this.kubeconfig = this.cp.kubeconfig;
    } else {
      this.kubeconfig = this.opts.controlPlane.kubeconfig;
    }
    this.toxiproxy = await Toxiproxy.start(dir, binDir);

    const api = this.objectApi();
    await installWidgetCrd(this.kubeConfig());
    const suffix = Math.random().toString(36).slice(2, 7);
    for (let i = 0; i < (this.opts.namespaces ?? 3); i++) {
      const name = `faults-${suffix}-${i}`;
      await api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      this.namespaces.push(name);
    }
    this.agentIdentity = await createAgentIdentity(this.kubeConfig(), this.namespaces[0]!, suffix);

    let storage: StorageSpec = { type: 'memory' };
    if (this.opts.store === 'mysql') {
      let serverUrl: string;
      if (this.opts.mariadb === 'private' || this.opts.mariadb === undefined) {
        // Production durability: a SIGKILLed MariaDB must not lose acknowledged writes because of a test setting.
        this.mariadb = await MariaDb.start({ tmpfsMb: this.opts.mariadbTmpfsMb, durable: true });
        serverUrl = this.mariadb.url;
      } else serverUrl = this.opts.mariadb.serverUrl;
      const db = await createDatabase(serverUrl, 'faults');
      this.dropDb = db.drop;
      const u = new URL(db.url);
      this.links.mysql = await this.toxiproxy.createProxy('mysql', u.host);
      u.host = this.links.mysql;
      storage = { type: 'mysql', url: u.toString() };
    }
    if (this.opts.store === 'postgres') {
      // A server of the rig's own (the test run shares only MariaDB), stopped with the rig.
      const given = process.env.SCALE_AGENT_TEST_POSTGRES_URL;
      if (!given) this.postgresServer = await PostgresServer.start({ durable: true });
      const db = await createPostgresDatabase(given ?? this.postgresServer!.url, 'faults');
      this.dropDb = db.drop;
      const u = new URL(db.url);
      this.links.postgres = await this.toxiproxy.createProxy('postgres', u.host);
      u.host = this.links.postgres;
      storage = { type: 'postgres', url: u.toString() };
    }

    this.server = await PluginServerProcess.start({
      dir,
      storage,
      extra: {
        // Short heartbeats and idle timeout, so a blackhole of a few seconds outlasts them.
        limits: { heartbeatIntervalSeconds: 1, sessionIdleTimeoutSeconds: 5 },
        operations: { agentWaitSeconds: 20, cacheWaitSeconds: 30, timeoutSeconds: 60 },
      },
    });
    this.links.grpc = await this.toxiproxy.createProxy('grpc', this.server.grpcAddress);

    const adminYaml = readFileSync(this.kubeconfig, 'utf8');
    const upstream = /server: https:\/\/([^\s]+)/.exec(adminYaml)?.[1];
    const adminToken = /token: (\S+)/.exec(adminYaml)?.[1];
    if (!upstream || !adminToken) throw new Error(`${this.kubeconfig}: no https server URL or token`);
    this.links.apiserver = await this.toxiproxy.createProxy('apiserver', upstream);
    const agentKubeconfig = join(dir, 'agent-kubeconfig');
    writeFileSync(
      agentKubeconfig,
      adminYaml
        .replace(`server: https://${upstream}`, `server: https://${this.links.apiserver}`)
        .replace(`token: ${adminToken}`, `token: ${this.agentIdentity.token}`),
      { mode: 0o600 },
    );
    this.agent = await AgentProcess.start({
      dir,
      agentId: 'faults-agent',
      serverAddress: this.links.grpc,
      accounts: [
        {
          name: ACCOUNT,
          kubeconfigFile: agentKubeconfig,
          namespaces: this.namespaces,
          kinds: ['ConfigMap', 'Secret', 'Service', `Widget.${WIDGET_GROUP}`],
        },
      ],
      extra: { server: { address: this.links.grpc, insecure: true, heartbeatSeconds: 1, backoff: backoff() } },
      env: this.opts.agentEnv,
    });
  }

  checkOptions(): CacheCheckOptions {
    return {
      httpBase: this.server.httpBase,
      account: ACCOUNT,
      kubeconfig: this.kubeconfig,
      kinds: CHECKED_KINDS,
      namespaces: this.namespaces,
    };
  }

  /** Waits until the cache equals the API server (throws with the diff after `timeoutMs`). */
  converge(timeoutMs = 120_000): Promise<CacheDiff> {
    return waitForCacheToMatch(this.checkOptions(), timeoutMs);
  }

  /** Pids of the processes whose RSS and open files are watched across repetitions. */
  pids(): Record<string, number> {
    const out: Record<string, number> = { agent: this.agent.proc.pid, 'plugin-server': this.server.proc.pid };
    if (this.mariadb) out.mariadb = this.mariadb.pid;
    if (this.postgresServer) out.postgres = this.postgresServer.pid;
    for (const [c, p] of this.cp?.procs ?? []) out[c] = p.pid;
    return out;
  }

  /** Where the Node processes' heap figures are read (their /metrics, prom-client's default metrics). */
  metricsEndpoints(): [name: string, url: string, prefix: string][] {
    return [
      ['agent', `${this.agent.adminBase}/metrics`, 'scale_agent_agent_'],
      ['plugin-server', `${this.server.httpBase}/metrics`, 'scale_agent_plugin_server_'],
    ];
  }

  async stop(): Promise<void> {
    await this.agent?.stop().catch(() => undefined);
    await this.server?.stop().catch(() => undefined);
    await this.toxiproxy?.stop().catch(() => undefined);
    if (!this.cp && this.agentIdentity) {
      await deleteAgentIdentity(this.kubeConfig(), this.agentIdentity).catch(() => undefined);
    }
    if (!this.cp && this.namespaces.length) {
      const api = this.objectApi();
      for (const name of this.namespaces) {
        await api.delete({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } }).catch(() => undefined);
      }
    }
    await this.dropDb?.().catch(() => undefined);
    // MariaDB's own log goes with its temp dir: keep a copy beside the others (a crash under a fault is in it).
    if (this.mariadb) cpSync(this.mariadb.logFile, join(this.opts.dir, 'mariadbd.log'), { force: true });
    await this.mariadb?.stop().catch(() => undefined);
    if (this.postgresServer) cpSync(this.postgresServer.logFile, join(this.opts.dir, 'postgres.log'), { force: true });
    await this.postgresServer?.stop().catch(() => undefined);
    await this.cp?.stop().catch(() => undefined);
  }
}

/** Reconnect quickly after a fault (the production default backs off to 30 s). */
function backoff() {
  return { baseDelaySeconds: 0.2, maxDelaySeconds: 2 };
}
