/**
 * The usual end-to-end stack in one call: namespaces on the shared control plane, a store (memory, or a database of
 * its own on the shared MariaDB), plugin-server replicas on it (behind HAProxy when asked), and agents whose accounts
 * read the shared control plane. Everything it starts, and whatever a test hands to defer(), is undone by one stop(),
 * last started first. Tests that need a private control plane or MariaDB, or a fault between the parts, build on
 * the same processes (faults/rig.ts) rather than on this.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { CacheCheckOptions, CheckedKind } from './cache-checker.js';
import { Haproxy } from './haproxy.js';
import { createNamespace, createTestDatabase, kubectl, testEnv } from './index.js';
import { createPostgresDatabase, testPostgres } from './postgres.js';
import {
  AgentProcess,
  getJson,
  PluginServerProcess,
  type AgentAccountSpec,
  type AgentOptions,
  type PluginServerOptions,
  type StorageSpec,
} from './processes.js';

/** An agent account on the stack: the admin kubeconfig and every namespace of the stack unless it says otherwise. */
export interface StackAccount extends Omit<AgentAccountSpec, 'kubeconfigFile' | 'namespaces'> {
  kubeconfigFile?: string;
  namespaces?: string[];
}

export type StackAgentOptions = Omit<AgentOptions, 'dir' | 'serverAddress' | 'accounts'> & {
  accounts: StackAccount[];
  /** Default: the load balancer when there is one, else the first replica. */
  serverAddress?: string;
};

export interface StackOptions {
  /** Names the temp dir and the database, and is the namespace's prefix when `namespaces` is not given. */
  name: string;
  store: 'memory' | 'mysql' | 'postgres';
  /** Prefixes of the namespaces to create (deleted by stop()); default `[name]`, `[]` for none. */
  namespaces?: string[];
  /**
   * Plugin-server replicas on the one store, started together (their migrations race, as a rollout's do); 0 for none
   * yet (a test that writes files into `dir` first adds them with addReplica()).
   */
  replicas?: number;
  /** HAProxy in front of the replicas (haproxy.ts); agents connect through it. */
  loadBalancer?: boolean;
  /** Every replica's settings. */
  server?: Pick<PluginServerOptions, 'extra' | 'gracePeriodSeconds'>;
  /** One agent with these accounts, started once the replicas (and the load balancer) are up; more with addAgent(). */
  agent?: StackAgentOptions;
}

const CONFIG_MAP: CheckedKind = { apiVersion: 'v1', kind: 'ConfigMap', namespaced: true };

export class Stack {
  #dir: string | undefined;
  readonly namespaces: string[] = [];
  readonly replicas: PluginServerProcess[] = [];
  readonly agents: AgentProcess[] = [];
  lb: Haproxy | undefined;
  storage: StorageSpec = { type: 'memory' };
  private readonly undo: (() => Promise<unknown>)[] = [];

  /** Starts nothing (useStack() builds its stack while the file is collected); begin() starts it. */
  private constructor(readonly opts: StackOptions) {}

  static async start(opts: StackOptions): Promise<Stack> {
    const stack = new Stack(opts);
    await stack.begin();
    return stack;
  }

  /** See useStack(). */
  static use(opts: StackOptions): Stack {
    const stack = new Stack(opts);
    beforeAll(() => stack.begin());
    afterAll(() => stack.stop());
    return stack;
  }

  /** Starts what the options ask for; when a step fails, undoes the steps before it. */
  private async begin(): Promise<void> {
    this.#dir = mkdtempSync(join(tmpdir(), `scale-agent-${this.opts.name}-`));
    try {
      await this.setUp();
    } catch (e) {
      await this.stop().catch(() => undefined);
      throw e;
    }
  }

  /** The stack's temp dir (config files, logs). */
  get dir(): string {
    if (this.#dir === undefined) throw new Error(`the ${this.opts.name} stack has not started`);
    return this.#dir;
  }

  /** The first namespace. */
  get ns(): string {
    return this.namespaces[0]!;
  }

  /** The first replica. */
  get server(): PluginServerProcess {
    return this.replicas[0]!;
  }

  /** The first two replicas, for the tests that tell A from B. */
  get pair(): [PluginServerProcess, PluginServerProcess] {
    if (this.replicas.length < 2) throw new Error(`the ${this.opts.name} stack has fewer than two replicas`);
    return [this.replicas[0]!, this.replicas[1]!];
  }

  /** The first agent. */
  get agent(): AgentProcess {
    return this.agents[0]!;
  }

  /** Where agents connect: the load balancer when there is one, else the first replica. */
  get grpcAddress(): string {
    return this.lb?.grpcAddress ?? this.server.grpcAddress;
  }

  /** Where REST reads go: the load balancer when there is one, else the first replica. */
  get httpBase(): string {
    return this.lb?.httpBase ?? this.server.httpBase;
  }

  private async setUp(): Promise<void> {
    const { opts } = this;
    for (const prefix of opts.namespaces ?? [opts.name]) await this.addNamespace(prefix);
    if (opts.store === 'mysql') {
      const db = await createTestDatabase(`e2e_${opts.name}`);
      this.defer(() => db.drop());
      this.storage = { type: 'mysql', url: db.url };
    }
    if (opts.store === 'postgres') {
      // The test run shares only MariaDB: a PostgreSQL server of the stack's own, stopped after its database.
      const server = await testPostgres();
      this.defer(() => server.stop());
      const db = await createPostgresDatabase(server.url, `e2e_${opts.name}`);
      this.defer(() => db.drop());
      this.storage = { type: 'postgres', url: db.url };
    }
    const count = opts.replicas ?? 1;
    const names = count === 1 ? ['plugin-server'] : Array.from({ length: count }, (_, i) => `replica-${i}`);
    await Promise.all(names.map((name) => this.addReplica({ name })));
    if (opts.loadBalancer) await this.addLoadBalancer();
    if (opts.agent) await this.addAgent(opts.agent);
  }

  /** A namespace on the shared control plane, deleted (without waiting) by stop(). */
  async addNamespace(prefix: string): Promise<string> {
    const ns = await createNamespace(prefix);
    this.namespaces.push(ns);
    this.defer(() => kubectl(['delete', 'namespace', ns, '--wait=false'], { allowFail: true }));
    return ns;
  }

  /**
   * One more replica on the stack's store, or on `storage` (the same database through a proxy, say), with the stack's
   * settings or `extra` ones, and `env` added to its environment (a skewed clock).
   */
  async addReplica(o: {
    name: string;
    storage?: StorageSpec;
    extra?: PluginServerOptions['extra'];
    env?: PluginServerOptions['env'];
  }): Promise<PluginServerProcess> {
    const server = await PluginServerProcess.start({
      dir: this.dir,
      name: o.name,
      storage: o.storage ?? this.storage,
      ...this.opts.server,
      ...(o.extra ? { extra: o.extra } : {}),
      ...(o.env ? { env: o.env } : {}),
    });
    this.replicas.push(server);
    this.defer(() => server.stop());
    return server;
  }

  /** HAProxy in front of every replica started so far. */
  async addLoadBalancer(): Promise<Haproxy> {
    const backends = this.replicas.map((r, i) => ({ name: `r${i}`, grpcPort: r.grpcPort, httpPort: r.httpPort }));
    const lb = await Haproxy.start({ dir: this.dir, backends });
    this.lb = lb;
    this.defer(() => lb.stop());
    return lb;
  }

  /** An agent process whose accounts default to the admin kubeconfig and the stack's namespaces. */
  async addAgent(o: StackAgentOptions): Promise<AgentProcess> {
    const agent = await AgentProcess.start({
      ...o,
      dir: this.dir,
      serverAddress: o.serverAddress ?? this.grpcAddress,
      accounts: o.accounts.map((a) => ({
        ...a,
        kubeconfigFile: a.kubeconfigFile ?? testEnv().kubeconfig,
        namespaces: a.namespaces ?? [...this.namespaces],
      })),
    });
    this.agents.push(agent);
    this.defer(() => agent.stop());
    return agent;
  }

  /** GET a REST path through the load balancer when there is one, else from the first replica. */
  get<T = unknown>(path: string): Promise<{ status: number; body: T }> {
    return getJson<T>(this.httpBase + path);
  }

  /** What the cache checker compares for `account`: `kinds` (ConfigMaps) in the stack's namespaces, as admin. */
  cacheCheck(account: string, o: { kinds?: CheckedKind[]; httpBase?: string } = {}): CacheCheckOptions {
    return {
      httpBase: o.httpBase ?? this.httpBase,
      account,
      kubeconfig: testEnv().kubeconfig,
      namespaces: [...this.namespaces],
      kinds: o.kinds ?? [CONFIG_MAP],
    };
  }

  /** Something for stop() to undo (before what was started earlier). */
  defer(fn: () => Promise<unknown>): void {
    this.undo.push(fn);
  }

  /** Undoes everything, last started first; every step runs even when one fails, and the failures are thrown. */
  async stop(): Promise<void> {
    const errors: unknown[] = [];
    while (this.undo.length) await this.undo.pop()!().catch((e: unknown) => errors.push(e));
    if (errors.length) throw new AggregateError(errors, `stopping the ${this.opts.name} stack`);
  }
}

export const startStack = (opts: StackOptions): Promise<Stack> => Stack.start(opts);

/**
 * The stack of the describe block this is called in: started in its beforeAll (the block's own beforeAll hooks run
 * after it, so they may add agents and nodes), stopped in its afterAll. Its getters (ns, server, pair, …) read it once
 * started: call them in hooks and tests, not while the file is collected.
 */
export const useStack = (opts: StackOptions): Stack => Stack.use(opts);

/** The account lease settings every replica of a replicas test gets (the plugin-server's `accounts` block). */
export interface LeaseSettings {
  gracePeriodSeconds: number;
  leaseSeconds: number;
}

/** The replicas tests' stack: `replicas` (default 2) replicas on a MySQL database of their own, with these leases. */
export const replicasStack = (
  name: string,
  accounts: LeaseSettings,
  o: Omit<StackOptions, 'name' | 'store' | 'server'> = {},
): StackOptions => ({ name, store: 'mysql', replicas: 2, ...o, server: { extra: { accounts } } });

export const startReplicas = (...args: Parameters<typeof replicasStack>): Promise<Stack> =>
  startStack(replicasStack(...args));
