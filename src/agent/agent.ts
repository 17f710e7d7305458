import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { sleep } from '../shared/clock.js';
import { formatDetail, isScaleAgentError } from '../shared/errors.js';
import { createLogger, type Logger } from '../shared/logging.js';
import {
  AccountState,
  PROTOCOL_VERSION,
  type AccountsChanged,
  type AccountStatus,
  type Hello,
  type Welcome,
} from '../shared/proto.js';
import { versionInfo } from '../shared/version.js';
import { WatchedFiles } from '../shared/watched-files.js';
import { AccountRunner, type KubernetesSettings, type WatchInfo } from './account.js';
import { AdminServer } from './admin.js';
import { isSecretReference } from '../shared/secrets/index.js';
import { configFiles } from '../shared/yaml-config.js';
import { diffAccounts, parseAgentConfigs, stableJson, type AccountConfig, type AgentConfig } from './config.js';
import { definitionFingerprint, dynamicAccountConfig } from './dynamic-accounts.js';
import { AgentMetrics } from './metrics.js';
import { OperationRunner } from './operations.js';
import type { KindPolicy } from './filters.js';
import { agentSecrets, type AgentSecrets } from './secrets.js';
import { SendQueue } from './send-queue.js';
import { StreamClient } from './stream.js';
import { SyncBudget } from './sync-budget.js';
import { HeapRelease } from './heap-release.js';

export interface AgentOptions {
  /**
   * The config file, or several merged in order (later over earlier), or directories of them (configFiles():
   * name order, `*-local.yaml` last). Each file is watched.
   */
  configFile: string | readonly string[];
  logger?: Logger;
  /** Reload when the file changes (default true). */
  watchConfig?: boolean;
  /** Poll interval of the config watcher, for tests. */
  configPollMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** How long Hello waits for accounts still loading their credentials before going without them. */
const HELLO_WAIT_MS = 10_000;

/**
 * The agent process: config (+ reload), one AccountRunner per account, the send queue, the stream and the admin
 * endpoint. A byte's path: reflector (account.ts) → SendQueue → StreamClient → plugin-server.
 */
export class Agent {
  config: AgentConfig;
  readonly metrics = new AgentMetrics();
  readonly queue: SendQueue;
  readonly stream: StreamClient;
  readonly operations: OperationRunner;
  /** The plugin-server's kind policy, from the last Welcome. */
  private kindPolicy: KindPolicy | undefined;
  readonly admin: AdminServer;
  /** /healthz and /readyz only, where the kubelet's probes reach them (config `health`). */
  readonly health: AdminServer;
  readonly log: Logger;
  private readonly accounts = new Map<string, AccountRunner>();
  private readonly syncBudget: SyncBudget;
  private readonly heapRelease = new HeapRelease();
  private readonly firstAttempts = new Map<string, Promise<void>>();
  private helloAccounts = new Set<string>();
  /** Dynamic accounts (assigned by the plugin-server): name -> definition fingerprint. */
  private readonly dynamic = new Map<string, string>();
  private watcher: WatchedFiles | undefined;
  /** The config files, in merge order. */
  private readonly files: string[];
  private readonly secrets: AgentSecrets;
  private reloading: Promise<void> = Promise.resolve();
  private stopped = false;

  private constructor(
    private readonly options: AgentOptions,
    files: string[],
    texts: string[],
  ) {
    this.files = files;
    this.config = parseAgentConfigs(this.sources(texts), options.env);
    this.syncBudget = new SyncBudget(this.config.kubernetes.maxConcurrentSyncs, {
      onBusy: () => this.heapRelease.syncStarted(),
      onIdle: () => this.heapRelease.syncsDone(),
    });
    this.log = options.logger ?? createLogger({ name: 'agent', base: { agentId: this.config.agentId } });
    this.secrets = agentSecrets(this.config, options.env ?? process.env, this.log.child({ component: 'secrets' }));
    this.queue = new SendQueue(this.config.queue, {
      onSent: (changes, bytes) => {
        this.metrics.bytesSent.inc(bytes);
        for (const c of changes) this.metrics.eventsSent.inc({ account: c.account });
      },
      onPaused: () => this.metrics.backpressure.inc(),
    });
    this.metrics.sources = {
      watchStates: () => {
        const states = new Map<string, number>();
        for (const a of this.accounts.values())
          for (const w of a.watches()) states.set(w.state, (states.get(w.state) ?? 0) + 1);
        return states;
      },
      queue: () => this.queue.stats(),
    };
    this.stream = new StreamClient({
      logger: this.log.child({ component: 'stream' }),
      metrics: this.metrics,
      queue: this.queue,
      server: () => this.config.server,
      hello: () => this.hello(),
      bearerToken: () => this.bearerToken(),
      onWelcome: (w) => this.onWelcome(w),
      onClosed: () => this.onClosed(),
      onAccountsChanged: (m) => void this.accountsChanged(m),
      onOperation: (op, sessionId) => this.operations.run(op, sessionId),
      onCancel: (operationId, reason) => this.operations.cancel(operationId, reason),
    });
    this.operations = new OperationRunner({
      logger: this.log.child({ component: 'operations' }),
      client: (name) => this.accounts.get(name)?.kubeClient(),
      send: (result) => this.stream.sendControl({ operationResult: result }),
      cancelled: (decision) => this.metrics.operationCancels.inc({ decision }),
    });
    const source = {
      registry: this.metrics.registry,
      readiness: () => this.readiness(),
      accounts: () => this.accountsView(),
      watches: (f: { account?: string; state?: string }) => this.watchesView(f),
    };
    this.admin = new AdminServer(source);
    this.health = new AdminServer(source, { healthOnly: true, metrics: () => this.config.health.metrics });
  }

  /** Loads the config, opens the admin endpoint, starts the accounts and dials the plugin-server. */
  static async start(options: AgentOptions): Promise<Agent> {
    const files = configFiles(typeof options.configFile === 'string' ? [options.configFile] : options.configFile);
    const texts = files.map((f) => readFileSync(f, 'utf8'));
    const agent = new Agent(options, files, texts);
    await agent.run(texts);
    return agent;
  }

  private sources(texts: readonly string[]): { file: string; text: string }[] {
    return this.files.map((file, i) => ({ file, text: texts[i] ?? '' }));
  }

  private async run(texts: string[]): Promise<void> {
    const address = await this.admin.listen(this.config.admin.host, this.config.admin.port);
    const health = await this.listenHealth(this.config.health);
    this.log.info(
      {
        admin: `http://${address.address}:${address.port}`,
        ...(health ? { health } : {}),
        server: this.config.server.address,
        version: versionInfo().version,
      },
      'agent started',
    );
    for (const a of this.config.kubernetes.accounts) this.addAccount(a);
    this.stream.start();
    if (this.options.watchConfig ?? true) {
      this.watcher = new WatchedFiles(this.files, (contents) => void this.reload(contents.map(String)), {
        pollMs: this.options.configPollMs,
      });
      this.watcher.start(texts);
    }
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.watcher?.stop();
    this.heapRelease.stop();
    await this.reloading;
    await this.operations.stop();
    await this.stream.stop();
    await Promise.all([...this.accounts.values()].map((a) => a.stop()));
    this.secrets.stop();
    await Promise.all([this.admin.close(), this.health.close()]);
    this.log.info('agent stopped');
  }

  /** Opens the health-only listener when the config gives it a port; returns its URL. */
  private async listenHealth(h: AgentConfig['health']): Promise<string | undefined> {
    if (h.port === undefined) return undefined;
    const a = await this.health.listen(h.host, h.port);
    return `http://${a.address}:${a.port}`;
  }

  /** Applies new texts of the config files (in their order); an invalid config is logged and the running one stays. */
  reload(texts: readonly string[]): Promise<void> {
    return this.serially('config reload', () => this.applyReload(texts));
  }

  /**
   * Runs `task` after the reloads and account changes before it. A task that throws is logged and ends there: it
   * neither stops the ones after it nor becomes an unhandled rejection, which would end the process and every
   * account with it (a restarted agent gets the same accounts and fails the same way).
   */
  private serially(what: string, task: () => Promise<void>): Promise<void> {
    this.reloading = this.reloading.then(task).catch((e: unknown) => {
      this.log.error({ error: (e as Error).message, task: what }, 'agent task failed; the agent carries on');
    });
    return this.reloading;
  }

  private async applyReload(texts: readonly string[]): Promise<void> {
    if (this.stopped) return;
    let next: AgentConfig;
    try {
      next = parseAgentConfigs(this.sources(texts), this.options.env);
    } catch (e) {
      const details = isScaleAgentError(e) ? e.details.map(formatDetail) : [];
      this.log.error({ error: (e as Error).message, details }, 'config reload failed; keeping the running config');
      return;
    }
    const prev = this.config;
    const diff = diffAccounts(prev.kubernetes.accounts, next.kubernetes.accounts);
    this.config = next;
    this.queue.updateOptions(next.queue);
    this.syncBudget.setLimit(next.kubernetes.maxConcurrentSyncs);
    for (const a of [...diff.removed, ...diff.changed]) await this.removeAccount(a.name);
    for (const a of [...diff.changed, ...diff.added]) this.addAccount(a);
    if (stableJson(prev.admin) !== stableJson(next.admin)) {
      await this.admin.close();
      const address = await this.admin.listen(next.admin.host, next.admin.port);
      this.log.info({ admin: `http://${address.address}:${address.port}` }, 'admin endpoint moved');
    }
    if (stableJson(prev.health) !== stableJson(next.health)) {
      await this.health.close();
      this.log.info({ health: (await this.listenHealth(next.health)) ?? 'off' }, 'health endpoint moved');
    }
    const accountsChanged = diff.added.length + diff.removed.length + diff.changed.length > 0;
    this.log.info(
      {
        added: diff.added.map((a) => a.name),
        removed: diff.removed.map((a) => a.name),
        changed: diff.changed.map((a) => a.name),
      },
      'config reloaded',
    );
    // Another server or identity needs a new stream (a new Hello). A new account list does not: AccountsUpdate
    // announces the added and changed accounts and withdraws the removed ones; the others keep their watches.
    if (stableJson(prev.server) !== stableJson(next.server) || prev.agentId !== next.agentId) {
      this.stream.restart('config changed');
    } else if (accountsChanged) {
      await this.updateAccounts(
        [...diff.changed, ...diff.added].map((a) => a.name),
        diff.removed.map((a) => a.name),
      );
    }
  }

  /**
   * Applies dynamic accounts from the server, and offers again the refused accounts it names, in order with config
   * reloads (announced with AccountsUpdate).
   */
  accountsChanged(message: AccountsChanged): Promise<void> {
    return this.serially('dynamic accounts', () => this.applyAccountsChanged(message));
  }

  private async applyAccountsChanged(message: AccountsChanged): Promise<void> {
    if (this.stopped) return;
    const added: string[] = [];
    const removed: string[] = [];
    for (const name of message.removed) {
      if (!this.dynamic.has(name)) continue;
      this.dynamic.delete(name);
      await this.removeAccount(name);
      removed.push(name);
    }
    for (const d of message.definitions) {
      const name = d.account?.name ?? '';
      if (this.config.kubernetes.accounts.some((a) => a.name === name)) {
        this.log.error({ account: name }, 'dynamic account has the name of a configured account; ignored');
        continue;
      }
      const fingerprint = definitionFingerprint(d);
      if (this.dynamic.get(name) === fingerprint) continue;
      const built = dynamicAccountConfig(d);
      if ('problem' in built) {
        this.log.error({ account: name, problem: built.problem }, 'dynamic account ignored');
        if (name) this.reportFailed(name, built.problem);
        continue;
      }
      await this.removeAccount(name);
      this.dynamic.set(name, fingerprint);
      this.addAccount(built.config);
      added.push(name);
    }
    await this.handOver(message.handOver);
    // Refused because another cluster's agent had registered the name first and that cluster's record is gone now,
    // or standing by for an account whose holder left (load sharing).
    const again = message.offerAgain.filter((name) => {
      const runner = this.accounts.get(name);
      return runner !== undefined && !runner.inSession && runner.rejectedReason !== undefined;
    });
    for (const name of again) this.helloAccounts.delete(name);
    if (added.length + removed.length + again.length === 0) return;
    if (added.length + removed.length > 0) {
      this.log.info({ added, removed }, 'dynamic accounts changed by the plugin-server');
    }
    if (again.length > 0) this.log.info({ accounts: again }, 'offering accounts again as the plugin-server asks');
    await this.updateAccounts([...added, ...again], removed);
  }

  /**
   * Another agent of the group ranks first for these accounts (load sharing): their watches stop (the others keep
   * theirs) and the server is told, after everything already sent, so it releases them to that agent; this one
   * stands by for them.
   */
  private async handOver(names: readonly string[]): Promise<void> {
    const runners = names.map((n) => this.accounts.get(n)).filter((r): r is AccountRunner => r?.inSession === true);
    if (runners.length === 0 || !this.stream.connected) return;
    await Promise.all(runners.map((r) => r.stopSession()));
    const handedOver = runners.map((r) => r.name);
    this.log.info({ accounts: handedOver }, 'handing accounts over to the agent of the group that ranks first');
    const result = await this.stream.updateAccounts({ added: [], removed: [], handedOver });
    // The stream ended meanwhile: the next Hello offers them again, and the server decides as for any offer.
    if (!result) return;
    for (const r of result.rejectedAccounts) this.accounts.get(r.name)?.reject(r.reason);
  }

  /**
   * Announces added or changed accounts and withdraws removed ones on the running stream (AccountsUpdate), then
   * starts the accepted accounts' watches from the returned resume points. Without a stream there is nothing to
   * do: the next Hello announces every account.
   */
  private async updateAccounts(added: string[], removed: string[]): Promise<void> {
    if (this.stopped || !this.stream.connected) return;
    const runners = added.map((n) => this.accounts.get(n)).filter((r): r is AccountRunner => r !== undefined);
    await Promise.race([Promise.all(runners.map((r) => r.firstAttempt)), sleep(HELLO_WAIT_MS)]);
    const announce = runners.filter((r) => this.accounts.get(r.name) === r && !this.helloAccounts.has(r.name));
    const accounts = announce.map((r) => r.helloAccount()).filter((a) => a !== undefined);
    if (accounts.length + removed.length === 0) return;
    for (const a of accounts) this.helloAccounts.add(a.name);
    const result = await this.stream.updateAccounts({ added: accounts, removed, handedOver: [] });
    // The stream ended meanwhile: the next Hello announces the accounts (and no longer the removed ones).
    if (!result) return;
    const rejected = new Map(result.rejectedAccounts.map((r) => [r.name, r.reason]));
    for (const name of result.acceptedAccounts) {
      const runner = this.accounts.get(name);
      if (runner && !runner.inSession) this.startSession(runner, result.resumePoints);
    }
    for (const [name, reason] of rejected) this.accounts.get(name)?.reject(reason);
    this.log.info(
      { accepted: result.acceptedAccounts, rejected: [...rejected.keys()], removed: result.removedAccounts },
      'accounts updated on the running stream',
    );
  }

  private startSession(runner: AccountRunner, resumePoints: Welcome['resumePoints']): void {
    // The server's kind policy first, so the session starts with the watches it allows.
    if (this.kindPolicy) runner.setKindPolicy(this.kindPolicy);
    runner.startSession({
      sink: this.queue,
      resumePoints,
      sendStatus: (status) => this.stream.sendControl({ accountStatus: this.withFailure(runner, status) }),
    });
  }

  private settings(): KubernetesSettings {
    const k = this.config.kubernetes;
    return {
      rediscoverySeconds: k.rediscoverySeconds,
      forbiddenRetrySeconds: k.forbiddenRetrySeconds,
      listPageSize: k.listPageSize,
      streamingLists: k.streamingLists,
      syncProgressMs: k.syncProgressSeconds * 1000,
      initialListStallMs: k.initialListStallSeconds * 1000,
      syncBudget: this.syncBudget,
    };
  }

  private addAccount(config: AccountConfig): void {
    const runner = new AccountRunner(config, {
      logger: this.log,
      metrics: this.metrics,
      settings: this.settings(),
      onChange: () => this.onAccountChange(runner),
      secrets: this.secrets.resolver,
      onSecretChanged: () => void this.serially('secret rotated', () => this.reconnect(runner)),
    });
    this.accounts.set(config.name, runner);
    this.firstAttempts.set(config.name, runner.firstAttempt);
    void runner.start();
  }

  /**
   * A secret the account's credentials come from changed (a rotated Secret or Vault value): the account starts over
   * with the new credentials and is announced again (AccountsUpdate), as a changed account in a reloaded config is.
   */
  private async reconnect(runner: AccountRunner): Promise<void> {
    if (this.stopped || this.accounts.get(runner.name) !== runner) return;
    this.log.info({ account: runner.name }, 'a secret the account reads changed; reconnecting with the new one');
    await this.removeAccount(runner.name);
    this.addAccount(runner.config);
    await this.updateAccounts([runner.name], []);
  }

  private async removeAccount(name: string): Promise<void> {
    const runner = this.accounts.get(name);
    if (!runner) return;
    this.accounts.delete(name);
    this.firstAttempts.delete(name);
    this.helloAccounts.delete(name);
    await runner.stop();
  }

  /** A runner that cannot reach its cluster reports FAILED with the reason, whatever its watches say. */
  private withFailure(runner: AccountRunner, status: AccountStatus): AccountStatus {
    if (runner.state !== 'failed' || !runner.error) return status;
    return { ...status, state: AccountState.ACCOUNT_STATE_FAILED, error: runner.error };
  }

  /** An account that could not be announced before (credentials unreadable) now can: announce it. */
  private onAccountChange(runner: AccountRunner): void {
    if (this.accounts.get(runner.name) !== runner) return;
    if (runner.inSession && runner.state === 'failed' && runner.error) {
      const status = { account: runner.name, state: 0, error: '', forbiddenKinds: [], kinds: [] };
      this.stream.sendControl({ accountStatus: this.withFailure(runner, status) });
    } else if (this.dynamic.has(runner.name) && runner.state === 'failed' && runner.error && !runner.helloAccount()) {
      // Its credentials do not load, so it cannot be announced: the server shows it FAILED with the reason.
      this.reportFailed(runner.name, runner.error);
    }
    if (this.stream.connected && runner.helloAccount() && !this.helloAccounts.has(runner.name)) {
      this.reloading = this.reloading.then(() => this.updateAccounts([runner.name], []));
    }
  }

  /** server.tokenFile's token: the file, or a secret reference read at each dial (a rotation applies on the next). */
  private async bearerToken(): Promise<string | undefined> {
    const file = this.config.server.tokenFile;
    if (!file) return undefined;
    if (!isSecretReference(file)) return readFileSync(file, 'utf8').trim();
    const secret = await this.secrets.resolver.open(file, () => undefined);
    secret.close();
    return secret.value.toString('utf8').trim();
  }

  private async hello(): Promise<Hello> {
    await Promise.race([Promise.all(this.firstAttempts.values()), sleep(HELLO_WAIT_MS)]);
    const accounts = [...this.accounts.values()].map((a) => a.helloAccount()).filter((a) => a !== undefined);
    this.helloAccounts = new Set(accounts.map((a) => a.name));
    const env = this.options.env ?? process.env;
    const identity: Record<string, string> = { hostname: hostname() };
    if (env.POD_NAME) identity.podName = env.POD_NAME;
    if (env.POD_NAMESPACE) identity.podNamespace = env.POD_NAMESPACE;
    if (env.NODE_NAME) identity.nodeName = env.NODE_NAME;
    return {
      agentId: this.config.agentId,
      version: versionInfo().version,
      zone: this.config.zone ?? '',
      identity,
      accounts,
      protocolVersion: PROTOCOL_VERSION,
      shareLoad: this.config.loadSharing ?? false,
    };
  }

  private onWelcome(welcome: Welcome): void {
    this.operations.sessionOpened(welcome.sessionId);
    const accepted = new Set(welcome.acceptedAccounts);
    const rejected = new Map(welcome.rejectedAccounts.map((r) => [r.name, r.reason]));
    this.kindPolicy = { cacheKinds: welcome.cacheKinds, cacheOmitKinds: welcome.cacheOmitKinds };
    for (const runner of this.accounts.values()) {
      if (accepted.has(runner.name)) {
        this.startSession(runner, welcome.resumePoints);
      } else if (rejected.has(runner.name)) {
        runner.reject(rejected.get(runner.name) ?? '');
      } else if (this.dynamic.has(runner.name) && runner.error) {
        // Not announced (its credentials do not load): tell the server, which shows it FAILED.
        this.reportFailed(runner.name, runner.error);
      }
    }
  }

  /** A dynamic account this agent cannot serve: the plugin-server shows it FAILED with `error`. */
  private reportFailed(account: string, error: string): void {
    this.stream.sendControl({
      accountStatus: { account, state: AccountState.ACCOUNT_STATE_FAILED, error, forbiddenKinds: [], kinds: [] },
    });
  }

  private async onClosed(): Promise<void> {
    await Promise.all([...this.accounts.values()].map((a) => a.stopSession()));
  }

  /** Ready = stream up and every account the server accepted fully listed (forbidden kinds excepted). */
  readiness(): { ready: boolean; connected: boolean; accounts: Record<string, string> } {
    const accounts: Record<string, string> = {};
    let ready = this.stream.connected;
    for (const a of this.accounts.values()) {
      let state: string;
      if (a.rejectedReason !== undefined) state = 'rejected';
      else if (a.state !== 'ready') state = a.state;
      else if (!a.inSession) state = 'not-connected';
      else state = a.synced ? 'synced' : 'syncing';
      if (state !== 'synced' && state !== 'rejected') ready = false;
      accounts[a.name] = state;
    }
    return { ready, connected: this.stream.connected, accounts };
  }

  private accountsView(): unknown[] {
    return [...this.accounts.values()].map((a) => {
      const watches = a.watches();
      const byState: Record<string, number> = {};
      for (const w of watches) byState[w.state] = (byState[w.state] ?? 0) + 1;
      return {
        name: a.name,
        state: a.rejectedReason !== undefined ? 'rejected' : a.state,
        error: a.error,
        rejectedReason: a.rejectedReason,
        cluster: a.identity,
        synced: a.synced,
        kinds: a.resources.map((r) => (r.group ? `${r.kind}.${r.group}` : r.kind)).sort(),
        forbiddenKinds: [...a.forbidden].sort(),
        watches: byState,
        connections: a.connections,
      };
    });
  }

  private watchesView(filter: { account?: string; state?: string }): WatchInfo[] {
    const out: WatchInfo[] = [];
    for (const a of this.accounts.values()) {
      if (filter.account && a.name !== filter.account) continue;
      for (const w of a.watches()) if (!filter.state || w.state === filter.state) out.push(w);
    }
    return out;
  }
}
