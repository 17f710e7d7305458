import { optionsToWire } from '../shared/account-options.js';
import { realClock, sleep, type Clock, type ClockTimer } from '../shared/clock.js';
import { isScaleAgentError, ScaleAgentError } from '../shared/errors.js';
import type { Logger } from '../shared/logging.js';
import { isSecretReference, type OpenSecret, type SecretResolver } from '../shared/secrets/index.js';
import {
  AccountState as ProtoAccountState,
  qualifiedKind,
  type Account,
  type AccountStatus,
  type ResumePoint,
} from '../shared/proto.js';
import {
  ACCOUNT_START_BACKOFF,
  accountSynced,
  CRD_REDISCOVERY_DELAYS_MS,
  planReflectors,
  rediscoveryDone,
  requestRediscovery,
  resumeKey,
  resumeVersions,
  STATUS_COALESCE_MS,
  type RediscoveryState,
} from './account-step.js';
import { Backoff } from './backoff.js';
import type { AccountConfig } from './config.js';
import { omitNamespacesSelector, selectResources, watchNamespaces, type KindPolicy } from './filters.js';
import { KubeClient, type ClusterIdentity } from './kube/client.js';
import { CRD_RESOURCE, resourceId, type ApiResource } from './kube/resources.js';
import type { AgentMetrics } from './metrics.js';
import { Reflector, scopeId, type ReflectorSink, type WatchScope } from './reflector.js';
import { kindKeyOf } from './send-queue.js';
import type { SyncBudget } from './sync-budget.js';
import { SyncProgress } from './sync-progress.js';

export interface KubernetesSettings {
  rediscoverySeconds: number;
  forbiddenRetrySeconds: number;
  listPageSize: number;
  streamingLists: 'auto' | 'never';
  /** Least time between two `initial sync progress` log lines of one account. */
  syncProgressMs: number;
  /** See ReflectorOptions.initialListStallMs. */
  initialListStallMs?: number;
  /** Shared by every account of the agent. */
  syncBudget?: SyncBudget;
  /** Time and randomness for the account and its reflectors: real ones unless a test brings its own. */
  clock?: Clock;
  random?: () => number;
}

/** What a stream session gives an account: where changes go, where each scope resumes, how to report status. */
export interface AccountSession {
  sink: ReflectorSink;
  resumePoints: ResumePoint[];
  sendStatus(status: AccountStatus): void;
}

export type AccountRunState = 'starting' | 'failed' | 'ready' | 'rejected' | 'stopped';

export interface WatchInfo {
  account: string;
  group: string;
  version: string;
  kind: string;
  namespace: string;
  state: string;
  synced: boolean;
  resourceVersion?: string;
  events: number;
  relists: number;
  failures: number;
  lastSyncMs?: number;
  lastError?: string;
}

/**
 * One account: its API server client, discovery (periodic, and soon after any CRD changes), and — while a stream
 * session has accepted it — one reflector per watch scope. Survives reconnects; only the reflectors are per session.
 */
export class AccountRunner {
  state: AccountRunState = 'starting';
  error: string | undefined;
  rejectedReason: string | undefined;
  identity: ClusterIdentity | undefined;
  resources: ApiResource[] = [];
  readonly forbidden = new Set<string>();

  private client: KubeClient | undefined;
  private clientLoad: Promise<KubeClient> | undefined;
  /** The secret its kubeconfig was read from, watched while the account runs. */
  private secret: OpenSecret | undefined;
  private discovered: ApiResource[] | undefined;
  private kindPolicy: KindPolicy | undefined;
  private session: AccountSession | undefined;
  private resume = new Map<string, string>();
  private readonly reflectors = new Map<string, Reflector>();
  private crdWatch: Reflector | undefined;
  /** The initial sync of the current session, until every scope is listed. */
  private progress: SyncProgress | undefined;
  private readonly abort = new AbortController();
  private rediscoverTimer: ClockTimer | undefined;
  private soonTimers: ClockTimer[] = [];
  private statusTimer: ClockTimer | undefined;
  private discovering: Promise<void> | undefined;
  private rediscovery: RediscoveryState = { running: false, again: false };
  private readonly log: Logger;
  private readonly clock: Clock;
  private firstAttemptDone: () => void = () => undefined;
  /** Settles after the first try to load credentials and discover, whether it worked or not. */
  readonly firstAttempt = new Promise<void>((resolve) => {
    this.firstAttemptDone = resolve;
  });

  constructor(
    readonly config: AccountConfig,
    private readonly deps: {
      logger: Logger;
      metrics: AgentMetrics;
      settings: KubernetesSettings;
      /** Something an admin endpoint or readiness shows changed. */
      onChange?(): void;
      /** Reads the account's secret references (kubeconfigFile: encryptedFile:...). */
      secrets?: SecretResolver;
      /** A secret the account's credentials came from changed: the account should reconnect with the new one. */
      onSecretChanged?(): void;
    },
  ) {
    this.log = deps.logger.child({ account: config.name });
    this.clock = deps.settings.clock ?? realClock;
  }

  get name(): string {
    return this.config.name;
  }

  /** Loads credentials and discovers, retrying with backoff until it works or the account is stopped. */
  async start(): Promise<void> {
    const backoff = new Backoff(ACCOUNT_START_BACKOFF, this.deps.settings.random);
    while (!this.abort.signal.aborted) {
      try {
        this.client ??= await this.kubeClient();
        this.identity ??= { ...this.client.localIdentity(), kubernetesVersion: '' };
        this.identity = await this.client.identity(this.abort.signal);
        await this.discover();
        this.state = 'ready';
        this.error = undefined;
        this.log.info(
          {
            apiServer: this.identity.apiServerHost,
            version: this.identity.kubernetesVersion,
            kinds: this.resources.length,
          },
          'account ready',
        );
        this.startCrdWatch();
        this.scheduleRediscovery();
        this.firstAttemptDone();
        this.deps.onChange?.();
        return;
      } catch (e) {
        if (this.abort.signal.aborted) break;
        this.state = 'failed';
        this.error = (e as Error).message;
        this.log.error({ error: this.error }, 'account cannot reach its cluster; retrying');
        this.firstAttemptDone();
        this.deps.onChange?.();
        await sleep(backoff.next(), this.abort.signal, this.clock);
      }
    }
    this.firstAttemptDone();
  }

  /**
   * The account's one Kubernetes client, shared by its watches and the operations the plugin-server sends (one
   * discovery cache, one set of connections). Loaded on first use; a failed load is tried again on the next use (a
   * Secret mounted late). Closed when the account stops.
   */
  kubeClient(): Promise<KubeClient> {
    if (this.abort.signal.aborted) {
      return Promise.reject(new ScaleAgentError('UNAVAILABLE', `account ${this.name} is stopping`));
    }
    if (this.clientLoad) return this.clientLoad;
    const load = this.credentials().then((source) => KubeClient.create(source));
    this.clientLoad = load;
    load.catch(() => {
      if (this.clientLoad === load) this.clientLoad = undefined;
    });
    return load;
  }

  /**
   * The account's config with its kubeconfig as KubeClient reads it: a secret reference in kubeconfigFile is read
   * (into memory only: the agent's root filesystem is read-only) and kept open, so a rotation is noticed. An error
   * names the account and the reference, never the secret.
   */
  private async credentials(): Promise<AccountConfig> {
    const ref = this.config.kubeconfigFile;
    if (!isSecretReference(ref)) return this.config;
    this.secret?.close();
    this.secret = undefined;
    let secret: OpenSecret;
    try {
      if (!this.deps.secrets) throw new ScaleAgentError('INVALID_INPUT', 'this agent reads no secret references');
      secret = await this.deps.secrets.open(ref, () => this.deps.onSecretChanged?.(), this.abort.signal);
    } catch (e) {
      const kind = isScaleAgentError(e) ? e.kind : 'UNAVAILABLE';
      throw new ScaleAgentError(kind, `account ${this.name}: kubeconfigFile: ${(e as Error).message}`, { cause: e });
    }
    if (this.abort.signal.aborted) {
      secret.close();
      throw new ScaleAgentError('UNAVAILABLE', `account ${this.name} is stopping`);
    }
    this.secret = secret;
    const { kubeconfigFile: _ref, ...rest } = this.config;
    return { ...rest, kubeconfigContents: secret.value.toString('utf8') };
  }

  /** The account as announced in Hello; undefined while its credentials cannot even be loaded. */
  helloAccount(): Account | undefined {
    if (!this.identity) return undefined;
    const c = this.config;
    return {
      name: c.name,
      cluster: { ...this.identity },
      ...optionsToWire(c),
    };
  }

  /** The stream accepted this account: start a reflector per scope, resuming where the server says. */
  startSession(session: AccountSession): void {
    this.session = session;
    this.rejectedReason = undefined;
    this.resume = resumeVersions(this.name, session.resumePoints);
    this.progress = new SyncProgress(this.log, this.deps.settings.syncProgressMs);
    this.reconcileReflectors();
    // Every scope resumed where the server's cache stands: there is no initial sync to report.
    if (this.synced) this.progress = undefined;
    this.sendStatusSoon();
  }

  /** The plugin-server's kind policy (Welcome): applied at once to what discovery last found. */
  setKindPolicy(policy: KindPolicy): void {
    if (JSON.stringify(policy) === JSON.stringify(this.kindPolicy)) return;
    this.kindPolicy = policy;
    if (this.discovered) this.select(this.discovered);
  }

  reject(reason: string): void {
    this.rejectedReason = reason;
    this.log.error({ reason }, 'plugin-server rejected the account');
    this.deps.onChange?.();
  }

  async stopSession(): Promise<void> {
    this.session = undefined;
    this.progress = undefined;
    const all = [...this.reflectors.values()];
    this.reflectors.clear();
    await Promise.all(all.map((r) => r.stop()));
    this.updateGauges();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.state = 'stopped';
    this.clock.clearTimeout(this.rediscoverTimer);
    this.clock.clearTimeout(this.statusTimer);
    for (const t of this.soonTimers) this.clock.clearTimeout(t);
    await this.stopSession();
    await this.crdWatch?.stop();
    await this.discovering?.catch(() => undefined);
    // Also a client still loading: it is closed once loaded.
    void this.clientLoad?.then((c) => c.close()).catch(() => undefined);
    this.secret?.close();
    this.deps.metrics.forbiddenKinds.remove(this.name);
  }

  /** Every scope listed (forbidden ones excepted): what /readyz waits for. */
  get synced(): boolean {
    return accountSynced(this.session !== undefined, this.state, this.reflectors.values());
  }

  /** HTTP/2 connections to the API server. */
  get connections(): number {
    return this.client?.connections ?? 0;
  }

  get inSession(): boolean {
    return this.session !== undefined;
  }

  watches(): WatchInfo[] {
    return [...this.reflectors.values()].map((r) => ({
      account: this.name,
      group: r.scope.resource.group,
      version: r.scope.resource.version,
      kind: r.scope.resource.kind,
      namespace: r.scope.namespace,
      state: r.state,
      synced: r.synced,
      resourceVersion: r.resourceVersion,
      events: r.events,
      relists: r.relists,
      failures: r.failures,
      lastSyncMs: r.lastSyncMs,
      lastError: r.lastError,
    }));
  }

  private async discover(): Promise<void> {
    if (!this.client) return;
    this.discovered = await this.client.discovery.watchable(this.abort.signal);
    this.select(this.discovered);
  }

  private select(all: ApiResource[]): void {
    const selected = selectResources(this.config, all, this.kindPolicy);
    const before = new Set(this.resources.map(resourceId));
    const changed = selected.length !== before.size || selected.some((r) => !before.has(resourceId(r)));
    this.resources = selected;
    if (changed && this.state === 'ready') {
      this.log.info({ kinds: selected.length }, 'discovery changed the watched kinds');
    }
    if (changed) this.reconcileReflectors();
  }

  /** Rediscovery, one at a time; a request during a run runs once more afterwards. */
  private rediscover(): void {
    if (this.abort.signal.aborted || !this.client) return;
    const step = requestRediscovery(this.rediscovery);
    this.rediscovery = step.state;
    if (step.run) this.runDiscovery();
  }

  private runDiscovery(): void {
    this.discovering = this.discover()
      .catch((e: unknown) => this.log.warn({ error: (e as Error).message }, 'rediscovery failed'))
      .finally(() => {
        this.discovering = undefined;
        const step = rediscoveryDone(this.rediscovery);
        this.rediscovery = step.state;
        if (!step.run) return;
        if (this.abort.signal.aborted) this.rediscovery = { running: false, again: false };
        else this.runDiscovery();
      });
  }

  private scheduleRediscovery(): void {
    this.clock.clearTimeout(this.rediscoverTimer);
    this.rediscoverTimer = this.clock.setTimeout(() => {
      this.rediscover();
      this.scheduleRediscovery();
    }, this.deps.settings.rediscoverySeconds * 1000);
  }

  /** A CRD appeared, changed or went away (see CRD_REDISCOVERY_DELAYS_MS). */
  private rediscoverSoon(): void {
    if (this.soonTimers.length > 0) return;
    for (const delay of CRD_REDISCOVERY_DELAYS_MS) {
      const t = this.clock.setTimeout(() => {
        this.soonTimers = this.soonTimers.filter((x) => x !== t);
        this.rediscover();
      }, delay);
      this.soonTimers.push(t);
    }
  }

  /** A private metadata-only watch on CRDs whose only job is to trigger rediscovery. */
  private startCrdWatch(): void {
    if (!this.client || this.crdWatch || this.config.namespaces.length > 0 || this.config.onlyNamespacedResources)
      return;
    const trigger: ReflectorSink = {
      syncStart: () => undefined,
      syncEnd: () => undefined,
      bookmark: () => undefined,
      change: () => {
        if (this.crdWatch?.synced) this.rediscoverSoon();
      },
      hasRoom: () => true,
      waitForRoom: () => Promise.resolve(),
    };
    this.crdWatch = new Reflector({
      client: this.client,
      scope: { account: this.name, resource: CRD_RESOURCE, namespace: '' },
      sink: trigger,
      logger: this.log.child({ watch: 'crd-trigger' }),
      metadataOnly: true,
      streamingLists: this.deps.settings.streamingLists === 'auto',
      forbiddenRetryMs: this.deps.settings.forbiddenRetrySeconds * 1000,
      quietForbidden: true,
      clock: this.deps.settings.clock,
      random: this.deps.settings.random,
    });
    this.crdWatch.start();
  }

  /** Brings the running reflectors in line with the discovered resources (only while in a session). */
  private reconcileReflectors(): void {
    const session = this.session;
    if (!session || !this.client) return;
    const wanted = new Map<string, WatchScope>();
    for (const r of this.resources) {
      for (const namespace of watchNamespaces(this.config, r)) {
        const scope = { account: this.name, resource: r, namespace };
        wanted.set(scopeId(scope), scope);
      }
    }
    const plan = planReflectors(this.reflectors.keys(), wanted.keys());
    for (const id of plan.stop) {
      const reflector = this.reflectors.get(id);
      if (!reflector) continue;
      this.reflectors.delete(id);
      void reflector.stop();
      this.forbidden.delete(qualifiedKind(reflector.scope.resource.group, reflector.scope.resource.kind));
    }
    for (const id of plan.start) {
      const scope = wanted.get(id);
      if (!scope) continue;
      const reflector = new Reflector({
        client: this.client,
        scope,
        sink: session.sink,
        logger: this.log,
        pageSize: this.deps.settings.listPageSize,
        streamingLists: this.deps.settings.streamingLists === 'auto',
        forbiddenRetryMs: this.deps.settings.forbiddenRetrySeconds * 1000,
        fieldSelector: omitNamespacesSelector(this.config, scope.resource),
        syncBudget: this.deps.settings.syncBudget,
        initialListStallMs: this.deps.settings.initialListStallMs,
        clock: this.deps.settings.clock,
        random: this.deps.settings.random,
        hooks: {
          onForbidden: (s) => this.setForbidden(s, true),
          onAllowed: (s) => this.setForbidden(s, false),
          onNotFound: () => this.rediscoverSoon(),
          onListProgress: (s, listed, total) => {
            this.progress?.listed(scopeId(s), listed, total);
            // Called per page or chunk: look at every reflector only when a line is due.
            if (this.progress?.due()) this.reportProgress();
          },
          onSynced: (s, ms, objects) => {
            this.deps.metrics.syncDuration.observe(ms / 1000);
            this.progress?.synced(scopeId(s), objects);
            this.reportProgress();
            this.deps.onChange?.();
          },
          onWatchRestart: (_s, reason) => this.deps.metrics.watchRestarts.inc({ reason }),
        },
      });
      this.reflectors.set(id, reflector);
      const resume = this.resume.get(resumeKey(this.name, scope.resource.group, scope.resource.kind, scope.namespace));
      reflector.start(resume);
    }
    this.updateGauges();
    this.sendStatusSoon();
  }

  /** Logs the initial sync's progress (throttled), and its end once every scope is listed. */
  private reportProgress(): void {
    const progress = this.progress;
    if (!progress) return;
    const scopes = this.reflectors.size;
    if (this.synced) {
      this.progress = undefined;
      progress.done(scopes);
      return;
    }
    const unsynced = [...this.reflectors.values()]
      .filter((r) => !r.synced && r.state !== 'forbidden')
      .map((r) => scopeId(r.scope));
    progress.tick(unsynced, scopes);
  }

  private setForbidden(scope: WatchScope, forbidden: boolean): void {
    const name = qualifiedKind(scope.resource.group, scope.resource.kind);
    const had = this.forbidden.has(name);
    if (forbidden === had) return;
    if (forbidden) this.forbidden.add(name);
    else this.forbidden.delete(name);
    this.deps.metrics.forbiddenKinds.set({ account: this.name }, this.forbidden.size);
    this.sendStatusSoon();
    this.deps.onChange?.();
  }

  /** Coalesces status reports: a burst of 403s at startup becomes one AccountStatus. */
  private sendStatusSoon(): void {
    if (this.statusTimer) return;
    this.statusTimer = this.clock.setTimeout(() => {
      this.statusTimer = undefined;
      if (!this.session) return;
      const kinds = new Map(
        this.resources.map((r) => [
          `${r.group}/${r.kind}`,
          kindKeyOf({ account: this.name, resource: r, namespace: '' }),
        ]),
      );
      this.session.sendStatus({
        account: this.name,
        state: ProtoAccountState.ACCOUNT_STATE_ACTIVE,
        error: this.forbidden.size > 0 ? `forbidden to list/watch: ${[...this.forbidden].sort().join(', ')}` : '',
        forbiddenKinds: [...this.forbidden].sort(),
        kinds: [...kinds.values()],
      });
    }, STATUS_COALESCE_MS);
  }

  private updateGauges(): void {
    this.deps.onChange?.();
  }
}
