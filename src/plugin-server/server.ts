import { randomUUID } from 'node:crypto';
import { availableParallelism, hostname, networkInterfaces } from 'node:os';
import type { ServerDuplexStream } from '@grpc/grpc-js';
import type { FastifyInstance } from 'fastify';
import { ScaleAgentError } from '../shared/errors.js';
import { createLogger, type Logger } from '../shared/logging.js';
import type { AgentMessage, ServerMessage } from '../shared/proto.js';
import { versionInfo } from '../shared/version.js';
import { AccountRegistry } from './accounts.js';
import { DynamicAccounts } from './accounts/dynamic.js';
import type { DynamicAccountStore } from './accounts/dynamic-store.js';
import { SecretBox } from './accounts/secret-box.js';
import type { ForwardRequest } from './api/account-management.js';
import { AuditLog } from './audit.js';
import { PeerSecret } from './auth/peer-secret.js';
import { AuthorizationPolicy } from './auth/policy.js';
import { TokenFile } from './auth/tokens.js';
import { API_BODY_LIMIT, buildApi } from './api/http.js';
import type { StoreBackend } from './cache/store.js';
import type { PluginServerConfig } from './config.js';
import { startGrpcServer, type GrpcEndpoint } from './grpc-server.js';
import { PluginServerMetrics } from './metrics.js';
import { CacheBarrier, LiveReader, OperationDispatcher, OperationMetrics, TaskRunner } from './ops/index.js';
import { cancelAtPeer, cancelTaskAtPeer, forwardOperation } from './ops/peer-forward.js';
import { ReplicaViews } from './replica-views.js';
import { CheckPool } from './ingest/check-pool.js';
import { AgentSession } from './sessions.js';
import { StorageFullSignal } from './storage-full.js';
import type { TaskRepository } from './tasks/index.js';
import {
  createDynamicAccountStore,
  createStore,
  createTaskRepository,
  sharedStorage,
  storagePeerSecret,
} from './storage.js';
import { UpstreamAccounts } from './upstream/accounts.js';
import { AccountScan, readerFor, scanClaims } from './accounts/account-scan.js';
import { UpstreamClient } from './upstream/client.js';
import { FrontMode } from './upstream/front.js';
import { ArtifactCatalogue } from './artifacts/catalogue.js';
import { APPLICATION_INDEX } from './views/app-index.js';
import { FiatPermissions } from './auth/fiat.js';

/** Running tasks are marked alive this often; unmarked for TASK_STALE_MS, any replica fails them (retryable). */
const TASK_HEARTBEAT_MS = 2000;
const TASK_STALE_MS = 10_000;
const TASK_PURGE_MS = 60_000;
/** How often a replica reads the dynamic accounts' version from the store (one primary-key read). */
const DYNAMIC_POLL_MS = 1_000;
/**
 * /readyz answers within this even when the store does not: a MySQL behind a partition (packets dropped, no reset)
 * leaves the ping hanging until TCP gives up, and a probe that times out says nothing about why.
 */
const READY_PING_TIMEOUT_MS = 2_000;

/**
 * Where peers reach this replica's REST API (leases record it, operations are forwarded to it): http.advertiseUrl,
 * else, listening on all interfaces, POD_IP (downward API) or the first non-loopback address (a pod has one: its
 * IP), else the listen address.
 */
function advertisedUrl(config: PluginServerConfig): string {
  const { advertiseUrl, host, port } = config.http;
  if (advertiseUrl) return advertiseUrl;
  const wildcard = host === '0.0.0.0' || host === '::' || host === '';
  const address = wildcard ? (process.env.POD_IP ?? firstExternalAddress()) : host;
  if (!address || port === 0) return '';
  return `http://${address.includes(':') ? `[${address}]` : address}:${port}`;
}

function firstExternalAddress(): string | undefined {
  const all = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
  return (all.find((i) => !i.internal && i.family === 'IPv4') ?? all.find((i) => !i.internal))?.address;
}

/** Network errors of a store that is not up (yet): its address does not resolve or nothing answers there. */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EAI_AGAIN', 'ENOTFOUND', 'ETIMEDOUT', 'EHOSTUNREACH', 'ECONNRESET']);

/**
 * The plugin-server process: store → account registry → gRPC sessions → REST. start() returns once both ports
 * listen; stop() closes agent streams (they reconnect elsewhere), then the listeners, then the store.
 */
export class PluginServer {
  readonly log: Logger;
  /** Shared by the MySQL cache store and task repository: writes refused for lack of space (for /readyz). */
  private readonly storageFull = new StorageFullSignal();
  readonly store: StoreBackend;
  readonly accounts: AccountRegistry;
  readonly metrics: PluginServerMetrics;
  readonly audit: AuditLog;
  readonly policy: AuthorizationPolicy;
  readonly dynamic: DynamicAccounts;
  readonly tasks: TaskRepository;
  readonly dispatcher: OperationDispatcher;
  readonly runner: TaskRunner;
  private readonly barrier: CacheBarrier;
  private readonly liveReader: LiveReader;
  private readonly dynamicStore: DynamicAccountStore;
  /** dynamicAccounts.scan: Clouddriver's matching accounts moved to agents on an interval (off without patterns). */
  readonly accountScan: AccountScan;
  /** Front mode (spinnaker.upstream): the real Clouddriver behind this server, its accounts, the routing. */
  private readonly upstream: { client: UpstreamClient; accounts: UpstreamAccounts; front: FrontMode } | undefined;
  /** http.peerAuth: what this replica presents to its peers on /internal/*, and checks from them. */
  private readonly peerSecret: PeerSecret | undefined;
  /** spinnaker.fiat: per-user READ of agent accounts (auth/read-access.ts). */
  private readonly fiat: FiatPermissions | undefined;
  private readonly sessions = new Set<AgentSession>();
  /** Started in start(), so a server that is only constructed (config checks, tests) holds no threads. */
  private checkPool: CheckPool | undefined;
  private readonly views: ReplicaViews;
  private grpc: GrpcEndpoint | undefined;
  private http: FastifyInstance | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private taskTimer: NodeJS.Timeout | undefined;
  private dynamicTimer: NodeJS.Timeout | undefined;
  private lastPurgeAt = 0;
  private stopping = false;
  /** The housekeeping pass under way, if any (stop() waits for it so nothing is published after withdrawing). */
  private housekeepingRun: Promise<void> | undefined;
  grpcPort = 0;
  httpPort = 0;

  constructor(
    readonly config: PluginServerConfig,
    private readonly options: {
      log?: Logger;
      store?: StoreBackend;
      /**
       * The task store, with `store` for replicas in one process sharing a memory store (tests): a peer runs only
       * operations of tasks it finds in the shared task store (api/peer-routes.ts).
       */
      tasks?: TaskRepository;
      /** Account management requests this server does not handle (front mode: to the upstream Clouddriver). */
      forwardAccountManagement?: ForwardRequest;
      /** How long start() waits for an unreachable store (default 60 s). */
      storeStartWaitMs?: number;
    } = {},
  ) {
    this.log = options.log ?? createLogger({ name: 'plugin-server', level: config.logLevel });
    this.store = options.store ?? createStore(config, this.storageFull);
    // The indexes the Spinnaker views read (application, cluster, controller), before anything is written.
    this.store.addIndex(APPLICATION_INDEX);
    this.accounts = new AccountRegistry(this.store, this.log, {
      gracePeriodMs: config.accounts.gracePeriodSeconds * 1000,
      leaseMs: config.accounts.leaseSeconds * 1000,
      replica: { id: `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`, url: advertisedUrl(config) },
    });
    this.metrics = new PluginServerMetrics({ store: this.store, accounts: this.accounts });
    this.audit = new AuditLog(this.log);
    this.views = new ReplicaViews({
      store: this.store,
      accounts: this.accounts,
      activity: this.metrics.activity,
      sessions: () => [...this.sessions].filter((s) => s.agentId).map((s) => s.info()),
      log: this.log,
      taskOwner: () => this.runner.ownerId,
    });
    this.policy = new AuthorizationPolicy(config.authorization, config.grpc.tls?.requireClientCert ?? false);
    const agentTokensFile = config.authorization?.agentTokensFile;
    this.dynamicStore = createDynamicAccountStore(config.storage);
    this.dynamic = new DynamicAccounts({
      store: this.dynamicStore,
      registry: this.accounts,
      policy: this.policy,
      agentTokens: agentTokensFile ? new TokenFile(agentTokensFile) : undefined,
      secrets: SecretBox.fromConfig(config.dynamicAccounts),
      sessions: () => this.sessions,
      audit: this.audit,
      log: this.log,
    });
    const ops = config.operations;
    this.peerSecret = config.http.peerAuth
      ? PeerSecret.fromFile(config.http.peerAuth.secretFile)
      : storagePeerSecret(config.storage);
    this.tasks = options.tasks ?? createTaskRepository(config.storage, this.storageFull);
    this.dispatcher = new OperationDispatcher({
      accounts: this.accounts,
      session: (id) => [...this.sessions].find((s) => s.id === id),
      log: this.log,
      options: { agentWaitMs: ops.agentWaitSeconds * 1000, operationTimeoutMs: ops.timeoutSeconds * 1000 },
      // Operations for accounts a peer replica's agent holds go to that replica (ops/peer-forward.ts).
      forward: (url, req, answerWithinMs) =>
        forwardOperation(url, req, { peerAuthorization: this.peerSecret?.authorization(), answerWithinMs }),
      cancelAtPeer: (url, operationId, reason) =>
        cancelAtPeer(url, operationId, reason, { peerAuthorization: this.peerSecret?.authorization() }),
    });
    // Every write is observed (onApplied): tasks wait on it for the cache to catch up with what their operation wrote.
    this.barrier = new CacheBarrier(this.store, this.accounts);
    this.runner = new TaskRunner({
      repo: this.tasks,
      dispatcher: this.dispatcher,
      barrier: this.barrier,
      log: this.log,
      options: { cacheWaitMs: ops.cacheWaitSeconds * 1000 },
      metrics: new OperationMetrics(this.metrics.registry),
      audit: this.audit,
      cancelAtOwner: (ownerId, id, requestedBy) => {
        const url = this.views.taskOwnerUrl(ownerId);
        if (!url) return undefined;
        return cancelTaskAtPeer(url, id, requestedBy, { peerAuthorization: this.peerSecret?.authorization() });
      },
    });
    this.liveReader = new LiveReader({
      accounts: this.accounts,
      dispatcher: this.dispatcher,
      timeoutMs: ops.liveReadTimeoutSeconds * 1000,
    });
    this.upstream = this.frontMode();
    const scan = config.dynamicAccounts.scan;
    this.accountScan = new AccountScan({
      config: scan,
      dynamic: this.dynamic,
      ...readerFor(scan, this.upstream?.client),
      log: this.log,
      metrics: this.metrics.accountScan,
    });
    const fiat = this.config.spinnaker?.fiat;
    this.fiat = fiat ? new FiatPermissions(fiat, { errors: this.metrics.fiatErrors, log: this.log }) : undefined;
    this.accounts.onHolderLost((name) => this.promoteStandbys(name));
    this.accounts.onNameFree((name) => this.offerAgain(name));
    this.accounts.onStandbyOutranks((name, agentId) => {
      for (const s of this.sessions) {
        if (s.agentId !== agentId || !s.shareLoad || !s.standbyFor.has(name)) continue;
        s.sendAccountsChanged({ added: [], removed: [], definitions: [], offerAgain: [name], handOver: [] });
      }
    });
    this.accounts.onHandOver((name, sessionId, to) => {
      const s = [...this.sessions].find((x) => x.id === sessionId);
      if (!s?.shareLoad) return;
      this.log.info({ account: name, from: s.agentId, to }, 'asking the agent to hand the account over');
      s.sendAccountsChanged({ added: [], removed: [], definitions: [], offerAgain: [], handOver: [name] });
    });
    // Never silently demoted: the agent reconnects, offers the account again and is told it stands by (or holds it
    // again, if nobody took it meanwhile).
    this.accounts.onLost((name, sessionId, why) => {
      const s = [...this.sessions].find((x) => x.id === sessionId);
      s?.close(new ScaleAgentError('UNAVAILABLE', `account ${name} lost (${why}); reconnect`), 'lease_lost');
    });
    this.accounts.onChange((name, state) => {
      const holder = [...this.sessions].find((s) => this.accounts.holds(s.id, name));
      this.audit.record({
        who: holder ? holder.identity.name : 'plugin-server',
        what: `account ${state.toLowerCase()}`,
        account: name,
        result: 'ok',
        agentId: holder?.agentId,
      });
    });
  }

  private frontMode(): PluginServer['upstream'] {
    const config = this.config.spinnaker?.upstream;
    if (!config) return undefined;
    const client = new UpstreamClient(config);
    const accounts = new UpstreamAccounts(client, {
      refreshMs: config.accountsRefreshSeconds * 1000,
      timeoutMs: config.mergeTimeoutMs,
      log: this.log,
      registered: () => this.accounts.list().map((a) => a.record.name),
      movedToAgents: scanClaims(this.config.dynamicAccounts.scan),
    });
    const front = new FrontMode({
      client,
      upstreamAccounts: accounts,
      isAgentAccount: (name) => this.accounts.get(name) !== undefined || this.dynamic.has(name),
      taskExists: async (id) => (await this.runner.get(id)) !== undefined,
      errors: this.metrics.upstreamErrors,
      mergeTimeoutMs: config.mergeTimeoutMs,
      bodyLimit: API_BODY_LIMIT,
      log: this.log,
    });
    return { client, accounts, front };
  }

  /** Front mode: why an agent account may not take a name, because the upstream Clouddriver has it. */
  private upstreamClash(): ((name: string) => string | undefined) | undefined {
    const accounts = this.upstream?.accounts;
    return accounts ? (name) => accounts.clash(name) : undefined;
  }

  /**
   * The store's first connection and migrations. An unreachable store is waited for (up to
   * `options.storeStartWaitMs`, default 60 s, with backoff), since in a cluster the database's Service, or cluster
   * DNS, may come up after the plugin-server's pods: on the real node, a replica started while CoreDNS was briefly
   * unready exited on `getaddrinfo EAI_AGAIN` and was restarted. Any other failure, or a store still unreachable
   * then, ends the start as before (exit code 3): a refused login or a failed migration is not waited for.
   */
  private async initStore(): Promise<void> {
    const deadline = Date.now() + (this.options.storeStartWaitMs ?? 60_000);
    for (let attempt = 1, delay = 500; ; attempt++, delay = Math.min(delay * 2, 8_000)) {
      try {
        await this.store.init();
        return;
      } catch (e) {
        const err =
          e instanceof ScaleAgentError
            ? e
            : new ScaleAgentError(
                'UNAVAILABLE',
                `cannot initialise the ${this.store.type} store: ${(e as Error).message}`,
                {
                  cause: e,
                },
              );
        const cause = (err.cause as { code?: unknown } | undefined)?.code;
        if (!UNREACHABLE.has(String(cause)) || Date.now() + delay > deadline) throw err;
        this.log.warn({ attempt, retryInMs: delay, err: err.message }, 'store unreachable at start, waiting for it');
        await new Promise((r) => setTimeout(r, delay));
      }
    }
  }

  async start(): Promise<{ grpcPort: number; httpPort: number }> {
    await this.initStore();
    await this.tasks.init();
    const threads = this.config.limits.checkThreads ?? Math.min(4, availableParallelism() - 1);
    if (threads > 0) this.checkPool = new CheckPool(threads, this.store.indexes());
    await this.runner.heartbeat();
    await this.accounts.load();
    await this.views.heartbeat();
    await this.dynamic.load();
    if (this.policy.mode === 'open') {
      this.log.warn('no authorization policy and no client certificates: any agent may register any account name');
    } else if (this.policy.mode === 'deny-all') {
      this.log.warn('client certificates required but no authorization policy: every account registration is refused');
    }
    if (!this.config.http.auth)
      this.log.warn('http.auth is not configured: the REST API is open to anyone who reaches it');

    if (this.upstream) {
      // Read before agents may register, so the first registrations already see the upstream's names.
      await this.upstream.accounts.start();
      this.log.info(
        { upstream: this.upstream.client.baseUrl, accounts: this.upstream.accounts.lastRefreshedAt > 0 },
        'front mode: requests not about agent accounts go to the upstream Clouddriver',
      );
    }
    this.grpc = await startGrpcServer(this.config, this.log, (call) => this.connect(call), this.metrics.tls);
    this.grpcPort = this.grpc.port;
    this.http = buildApi({
      log: this.log,
      http: this.config.http,
      audit: this.audit,
      store: this.store,
      accounts: this.accounts,
      metrics: this.metrics,
      views: this.views,
      ready: () => this.ready(),
      dynamic: this.dynamic,
      runner: this.runner,
      live: this.liveReader,
      dispatcher: this.dispatcher,
      barrier: this.barrier,
      peer: this.peerSecret,
      artifacts: new ArtifactCatalogue(this.config.spinnaker?.artifacts),
      managementPattern: this.config.accounts.management.pattern,
      forwardAccountManagement: this.options.forwardAccountManagement,
      upstreamClash: this.upstreamClash(),
      front: this.upstream?.front,
      fiat: this.fiat,
      accountScan: this.accountScan,
    });
    await this.http.listen({ host: this.config.http.host, port: this.config.http.port });
    const address = this.http.server.address();
    this.httpPort = typeof address === 'object' && address ? address.port : this.config.http.port;
    // Leases are renewed, peers' accounts taken in and orphans swept often enough that a lease never lapses while
    // this replica lives and the grace period is honoured within a few seconds.
    const sweepMs = Math.max(
      200,
      Math.min(5000, (this.config.accounts.gracePeriodSeconds * 1000) / 4, this.accounts.leaseMs / 3),
    );
    this.sweepTimer = setInterval(() => void this.housekeeping(), sweepMs);
    this.sweepTimer.unref();
    if (sharedStorage(this.config.storage)) {
      // Replicas follow the definitions in the store, the truth for all of them, well within a lease period; one
      // replica (memory storage) is that truth itself and polls nothing.
      this.dynamicTimer = setInterval(
        () =>
          void this.dynamic.sync().catch((e: unknown) => this.log.warn({ err: e }, 'dynamic accounts: store not read')),
        Math.min(DYNAMIC_POLL_MS, this.accounts.leaseMs / 3),
      );
      this.dynamicTimer.unref();
    }
    // On its own timer, not after a renewal: a renewal that hangs (a partition drops packets) must not keep this
    // replica's streams open past the holder's side of the lease (accounts.ts HOLDER_LEASE_FRACTION).
    this.leaseTimer = setInterval(
      () => {
        if (this.accounts.holderLeaseExpired()) this.dropStreams();
      },
      Math.max(50, Math.min(1000, this.accounts.leaseMs / 20)),
    );
    this.leaseTimer.unref();
    let taskHousekeeping: Promise<void> | undefined;
    this.taskTimer = setInterval(() => {
      taskHousekeeping ??= this.taskHousekeeping().finally(() => (taskHousekeeping = undefined));
    }, TASK_HEARTBEAT_MS);
    this.taskTimer.unref();
    this.accountScan.start();
    this.log.info(
      { grpcPort: this.grpcPort, httpPort: this.httpPort, store: this.store.type, version: versionInfo().version },
      'plugin-server listening',
    );
    return { grpcPort: this.grpcPort, httpPort: this.httpPort };
  }

  /**
   * Tasks: mark this replica's as alive, fail (retryable) those of replicas that died, purge old history. Any
   * replica does it; the conditional writes in the repository make doing it twice harmless.
   */
  private async taskHousekeeping(): Promise<void> {
    const ops = this.config.operations;
    try {
      await this.runner.heartbeat();
      const reaped = await this.runner.reap(TASK_STALE_MS);
      if (reaped > 0) this.log.warn({ tasks: reaped }, 'failed tasks whose replica stopped running them');
      if (Date.now() - this.lastPurgeAt > TASK_PURGE_MS) {
        this.lastPurgeAt = Date.now();
        const purged = await this.tasks.purge({
          olderThan: Date.now() - ops.historyDays * 86_400_000,
          keep: ops.historyMaxTasks,
        });
        if (purged > 0) this.log.info({ tasks: purged }, 'purged finished tasks past the history limits');
      }
    } catch (e) {
      this.log.warn({ err: e }, 'task housekeeping failed (store unreachable?)');
    }
  }

  private housekeeping(): void {
    if (this.housekeepingRun) return;
    this.housekeepingRun = this.accounts
      .refresh()
      // With the lease heartbeat: peers' entries are as fresh as their leases, and expire with them.
      .then(() =>
        // Not in the way of the sweep: a view that cannot be written only leaves peers' admin API behind.
        this.views.heartbeat().catch((e: unknown) => this.log.warn({ err: e }, 'replica view not published')),
      )
      .then(async () => {
        await this.accounts.sweep();
      })
      .catch((e: unknown) => {
        this.log.warn({ err: e }, 'account leases: refresh failed (store unreachable?)');
      })
      .finally(() => (this.housekeepingRun = undefined));
  }

  /**
   * Without the store this replica can neither write its agents' changes nor keep their accounts: it lets them go,
   * so they reconnect through the load balancer to a replica that can (this one reports not ready meanwhile).
   */
  private dropStreams(): void {
    if (this.sessions.size === 0) return;
    this.log.warn({ sessions: this.sessions.size }, 'store unreachable past the lease: closing agent streams');
    for (const s of [...this.sessions]) {
      s.close(
        new ScaleAgentError('UNAVAILABLE', 'plugin-server lost its store; reconnect to another replica'),
        'store',
      );
    }
  }

  /**
   * The account has no holder any more: streams that offered it as standby (another replica of the agent group) are
   * asked to reconnect, and the first to register again takes it over, resuming from the cache's resume points. An
   * agent sharing load is asked to offer it again on its running stream instead, so its other accounts keep their
   * watches (a handoff moves one account, and a rebalance several in a row).
   */
  private promoteStandbys(account: string): void {
    for (const s of this.sessions) {
      if (!s.standbyFor.has(account)) continue;
      if (s.shareLoad) {
        s.sendAccountsChanged({ added: [], removed: [], definitions: [], offerAgain: [account], handOver: [] });
        continue;
      }
      s.close(
        new ScaleAgentError('UNAVAILABLE', `account ${account} lost its holder; reconnect to take it over`),
        'promoted',
      );
    }
  }

  /**
   * Another cluster's record of the name is gone: streams refused for it are asked to offer it again (on the
   * running stream, so their other accounts keep their watches), and it is decided as any offer is: the first
   * claim holds it, the others stand by.
   */
  private offerAgain(account: string): void {
    for (const s of this.sessions) {
      if (s.refusedAs(account) !== 'cluster_conflict') continue;
      this.log.info({ account, agentId: s.agentId }, 'name free again: asking the refused agent to offer it again');
      s.sendAccountsChanged({ added: [], removed: [], definitions: [], offerAgain: [account], handOver: [] });
    }
  }

  private connect(call: ServerDuplexStream<AgentMessage, ServerMessage>): void {
    if (this.stopping || this.accounts.holderLeaseExpired()) {
      const why = this.stopping ? 'plugin-server is shutting down' : 'plugin-server lost its store';
      call.emit('error', { code: 14, details: why });
      return;
    }
    this.checkPool?.warm();
    const session = new AgentSession(
      call,
      {
        store: this.store,
        accounts: this.accounts,
        metrics: this.metrics,
        log: this.log,
        limits: this.config.limits,
        kindPolicy: {
          cacheKinds: this.config.accounts.cacheKinds,
          cacheOmitKinds: this.config.accounts.cacheOmitKinds,
        },
        serverVersion: versionInfo().version,
        gate: this.dynamic,
        upstreamClash: this.upstreamClash(),
        onOperationResult: (sessionId, result) => this.dispatcher.onResult(sessionId, result),
        checkPool: this.checkPool,
      },
      (s) => {
        this.sessions.delete(s);
        this.dispatcher.onSessionClosed(s.id);
      },
    );
    this.sessions.add(session);
  }

  async ready(): Promise<{ ready: boolean; reasons: string[] }> {
    const reasons: string[] = [];
    if (!this.grpc) reasons.push('gRPC server not listening');
    if (this.stopping) reasons.push('shutting down');
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.store.ping(),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error(`no answer within ${READY_PING_TIMEOUT_MS} ms`)),
            READY_PING_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (e) {
      reasons.push(`store: ${(e as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
    // The ping passes on a full disk; the writes refused meanwhile say it.
    const full = this.storageFull.reason();
    if (full) reasons.push(`store: ${full}`);
    // A replica that cannot renew its leases will lose its accounts to peers: it must not take traffic meanwhile.
    if (this.grpc && this.accounts.holderLeaseExpired()) {
      reasons.push('account leases not renewed in time (the store does not answer)');
    }
    return { ready: reasons.length === 0, reasons };
  }

  sessionInfo() {
    return [...this.sessions].map((s) => s.info());
  }

  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    if (this.leaseTimer) clearInterval(this.leaseTimer);
    if (this.taskTimer) clearInterval(this.taskTimer);
    if (this.dynamicTimer) clearInterval(this.dynamicTimer);
    const endStreams = (): void => {
      for (const s of [...this.sessions]) {
        s.close(new ScaleAgentError('UNAVAILABLE', 'plugin-server is shutting down'), 'shutdown');
      }
    };
    if (this.grpc) await this.grpc.stop(2000, endStreams);
    else endStreams();
    await this.http?.close();
    await this.accountScan.stop();
    this.upstream?.accounts.stop();
    await this.upstream?.client.close();
    await this.fiat?.close();
    this.runner.stop();
    await this.runner.flush();
    await this.accounts.flush();
    await this.views
      .withdraw()
      .catch((e: unknown) => this.log.warn({ err: e }, 'replica view not withdrawn; it expires'));
    await this.checkPool?.close();
    await this.store.close();
    await this.tasks.close();
    await this.dynamicStore.close();
    this.log.info('plugin-server stopped');
  }
}
