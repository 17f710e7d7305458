import type { ServerDuplexStream } from '@grpc/grpc-js';
import {
  OPTION_LISTS,
  optionsToWire,
  recordedOptions,
  updatedOptions,
  type RecordedOptions,
} from '../../shared/account-options.js';
import { ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import { AccountState as ProtoAccountState, type AccountStatus, type DynamicAccount } from '../../shared/proto.js';
import type { AccountRegistry } from '../accounts.js';
import type { AuditLog } from '../audit.js';
import { streamIdentity, type Identity } from '../auth/identity.js';
import type { AuthorizationPolicy } from '../auth/policy.js';
import type { TokenFile } from '../auth/tokens.js';
import type { GatedSession, GateVerdict, SessionGate } from '../session-gate.js';
import { FreshRead } from '../../shared/fresh-read.js';
import type {
  DynamicAccountStore,
  DynamicDefinition,
  ExpectedGeneration,
  StoredDynamicAccount,
} from './dynamic-store.js';
import type { SecretBox } from './secret-box.js';
import type { AccountDefinition } from '../../shared/clouddriver-accounts.js';

export const ACCOUNT_NAME = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$/;

/** What POST/PUT /armory/accounts/dynamic accept (after schema validation). */
/** A dynamic account's definition: the account definition Clouddriver's and Armory's APIs carry (one shape). */
export type DynamicAccountInput = AccountDefinition;

export type DynamicState = 'ACTIVE' | 'INACTIVE' | 'FAILED' | 'ORPHANED';

/** A dynamic account as the API shows it: never the kubeconfig contents. */
export interface DynamicAccountView extends RecordedOptions {
  name: string;
  dynamic: true;
  zoneId: string;
  state: DynamicState;
  error_message: string;
  failed_count: number;
  errorMessage: string;
  failedCount: number;
  agentId: string;
  source: DynamicDefinition['source'];
  kubeconfigFile?: string | undefined;
  context?: string | undefined;
  lastUpdated: number;
  createdAt: number;
}

interface Entry {
  def: DynamicDefinition;
  /** Plaintext kubeconfig, in memory only. */
  kubeconfig?: string | undefined;
  /** The store's generation of the row this entry was read from or written as. */
  generation: number;
}

export interface DynamicAccountsDeps {
  store: DynamicAccountStore;
  registry: AccountRegistry;
  policy: AuthorizationPolicy;
  agentTokens?: TokenFile | undefined;
  secrets?: SecretBox | undefined;
  sessions: () => Iterable<GatedSession>;
  audit: AuditLog;
  log: Logger;
  now?: () => number;
}

/**
 * Dynamic accounts (armory-scale-agent.md §3) and the session gate. Definitions are the operator's (REST, stored
 * with the kubeconfig sealed); placement is ours: an ACTIVE definition goes to one connected agent whose zone
 * matches its zoneId and whose identity the policy lets serve it, over the stream (AccountsChanged). The agent
 * announces it in its next Hello, where `check` accepts it only from the agent it was assigned to.
 */
export class DynamicAccounts implements SessionGate {
  private readonly entries = new Map<string, Entry>();
  /** account -> agentId it was sent to. */
  private readonly assignments = new Map<string, string>();
  /** Names a session announced and got refused, to tell the agent to drop the dynamic ones. */
  private readonly refused = new Map<string, Set<string>>();
  /** Enabled definitions no agent holds, since when this replica has seen them so (placement by peers). */
  private readonly unplacedSince = new Map<string, number>();
  /** The store's version the entries reflect. */
  private seenVersion = -1;
  private readonly fresh = new FreshRead(() => this.followStore());
  private readonly now: () => number;

  constructor(private readonly deps: DynamicAccountsDeps) {
    this.now = deps.now ?? Date.now;
  }

  async load(): Promise<void> {
    await this.deps.store.init();
    this.seenVersion = await this.deps.store.version();
    for (const row of await this.deps.store.list()) this.entries.set(row.definition.name, this.entryFrom(row));
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  /**
   * Brings this replica up to the store, the truth every replica follows: run every second or so (a primary-key
   * read when nothing changed), and before anything that would refuse or decide on a name this replica does not
   * know (a REST request, an agent offering it). A definition a peer created, changed or deleted is taken in, and
   * what it means for this replica's agents is done here: the agent holding it here is told (AccountsChanged).
   */
  sync(): Promise<void> {
    return this.fresh.get();
  }

  /** Whether `name` is a dynamic account, reading through to the store when this replica does not know it. */
  async lookup(name: string): Promise<boolean> {
    if (!this.entries.has(name)) await this.sync();
    return this.entries.has(name);
  }

  /** Before the gate is asked about offered names: any this replica knows neither way is read through. */
  async prepare(names: readonly string[]): Promise<void> {
    if (names.some((n) => !this.entries.has(n) && !this.deps.registry.get(n))) await this.sync();
  }

  private entryFrom(row: StoredDynamicAccount): Entry {
    const def = row.definition;
    let kubeconfig: string | undefined;
    if (def.source === 'kubeconfigContents') {
      try {
        if (!row.sealedKubeconfig || !this.deps.secrets) throw new Error('no key configured');
        kubeconfig = this.deps.secrets.open(row.sealedKubeconfig, def.name);
      } catch (e) {
        def.errorMessage = `kubeconfig contents cannot be decrypted: ${(e as Error).message}`;
        this.deps.log.error({ account: def.name }, 'dynamic account kubeconfig cannot be decrypted');
      }
    }
    return { def, kubeconfig, generation: row.generation };
  }

  private async followStore(): Promise<void> {
    const version = await this.deps.store.version();
    if (version !== this.seenVersion) {
      const rows = await this.deps.store.list();
      this.seenVersion = version;
      const stored = new Set<string>();
      for (const row of rows) {
        const name = row.definition.name;
        stored.add(name);
        const entry = this.entries.get(name);
        // Written by this replica (or taken in before): nothing new.
        if (entry && entry.generation >= row.generation) continue;
        const next = this.entryFrom(row);
        this.entries.set(name, next);
        // A peer placed it: its agent gets a lease period to register it before anyone places it again.
        if (placementOf(next.def) !== placementOf(entry?.def)) this.unplacedSince.delete(name);
        if (entry) await this.followChange(entry, next);
      }
      for (const name of [...this.entries.keys()]) {
        if (stored.has(name)) continue;
        // Deleted through a peer: the agent holding it here stops watching it, and it goes with its cache.
        this.entries.delete(name);
        this.unplacedSince.delete(name);
        await this.withdraw(name);
        this.deps.log.info({ account: name }, 'dynamic account deleted through another replica');
      }
    }
    this.placeUnplaced();
  }

  /** A peer changed a definition: what update() does, done by the replica whose agent has the account. */
  private async followChange(before: Entry, after: Entry): Promise<void> {
    const name = after.def.name;
    const holder = this.deps.registry.get(name)?.sessionId;
    const here = holder !== undefined || this.liveAgent(this.assignments.get(name)) !== undefined;
    if (!here) return;
    if (!after.def.enabled) await this.withdraw(name);
    else if (!before.def.enabled || wireJson(before.def, before.kubeconfig) !== wireJson(after.def, after.kubeconfig)) {
      await this.deps.registry.forget(name);
      this.place(name);
    } else if (optionsJson(before.def) !== optionsJson(after.def)) this.place(name);
  }

  /**
   * Enabled definitions no agent holds anywhere: the replica that wrote one places it on its own agents at once;
   * when it had none, a peer whose agent may serve it places it once it stayed unheld for a lease period (its
   * writer's agent would have registered it by then). Peers see that moment within a second of each other, so the
   * placement is a conditional write (placeUnheld): one replica places it, the others leave it.
   */
  private placeUnplaced(): void {
    const now = this.now();
    for (const [name, entry] of this.entries) {
      const reg = this.deps.registry.get(name);
      const held = reg?.sessionId !== undefined || (reg?.peer !== undefined && reg.state !== 'ORPHANED');
      if (!entry.def.enabled || held || this.liveAgent(this.assignments.get(name))) {
        this.unplacedSince.delete(name);
        continue;
      }
      const since = this.unplacedSince.get(name);
      if (since === undefined) this.unplacedSince.set(name, now);
      else if (now - since >= this.deps.registry.leaseMs) {
        this.unplacedSince.delete(name);
        void this.placeUnheld(name).catch((e: unknown) =>
          this.deps.log.warn({ account: name, err: (e as Error).message }, 'could not place the dynamic account'),
        );
      }
    }
  }

  /**
   * Places an account no agent holds on one of this replica's agents, if the definition is still as this replica
   * read it: the placement is written with the definition's generation (DynamicAccountStore.save), so of replicas
   * placing it at once exactly one writes — and sends it to its agent — and the others find it changed (nothing
   * sent; they take the winner's placement in when they follow the store).
   */
  async placeUnheld(name: string): Promise<boolean> {
    const entry = this.entries.get(name);
    const target = entry?.def.enabled ? this.target(name, entry.def) : undefined;
    if (!entry || !target) return false;
    const def = { ...entry.def, placement: { agentId: target.agentId, replica: this.deps.registry.replica.id } };
    const sealedKubeconfig =
      entry.kubeconfig !== undefined && this.deps.secrets ? this.deps.secrets.seal(entry.kubeconfig, name) : undefined;
    const generation = await this.deps.store.save({ definition: def, sealedKubeconfig }, entry.generation);
    if (generation === undefined) {
      this.deps.log.info({ account: name }, 'dynamic account placed through another replica first');
      return false;
    }
    this.entries.set(name, { ...entry, def, generation });
    this.place(name, target);
    return true;
  }

  // ---------------------------------------------------------------------------------------------------------
  // REST
  // ---------------------------------------------------------------------------------------------------------

  async create(input: DynamicAccountInput, who: string): Promise<DynamicAccountView> {
    await this.sync();
    if (this.entries.has(input.name) || this.deps.registry.get(input.name)) {
      throw new ScaleAgentError('CONFLICT', `account ${input.name} already exists`);
    }
    const now = Date.now();
    const { def, kubeconfig } = this.definitionFrom(input, undefined, now);
    const generation = await this.persist(def, kubeconfig, 'new');
    this.entries.set(def.name, { def, kubeconfig, generation });
    this.deps.audit.record({
      who,
      what: 'dynamic account created',
      account: def.name,
      result: 'ok',
      zoneId: def.zoneId,
    });
    if (def.enabled) this.place(def.name);
    return this.view(def.name)!;
  }

  async update(input: DynamicAccountInput, who: string): Promise<DynamicAccountView> {
    await this.sync();
    const entry = this.entries.get(input.name);
    if (!entry) throw new ScaleAgentError('NOT_FOUND', `Account does not exist (name: ${input.name})`);
    const { def, kubeconfig } = this.definitionFrom(input, entry, Date.now());
    const generation = await this.persist(def, kubeconfig, entry.generation);
    const watchChanged = wireJson(entry.def, entry.kubeconfig) !== wireJson(def, kubeconfig);
    const optionsChanged = optionsJson(entry.def) !== optionsJson(def);
    this.entries.set(def.name, { def, kubeconfig, generation });
    this.deps.audit.record({ who, what: 'dynamic account updated', account: def.name, result: 'ok' });
    if (this.heldByPeer(def.name)) {
      // The replica its agent streams to follows the change (followChange) within a second or so.
    } else if (!def.enabled) {
      await this.withdraw(def.name);
    } else if (watchChanged) {
      // New namespaces, kinds or credentials: the old scopes' objects must go, and the agent relists.
      await this.deps.registry.forget(def.name);
      this.place(def.name);
    } else if (optionsChanged) {
      // Permissions and Clouddriver options only: the agent announces the account again (AccountsUpdate) and the
      // server records them; the watches resume from the cache, which stays.
      this.place(def.name);
    }
    return this.view(def.name)!;
  }

  /** An account the agents registered from their own config (not dynamic): REST may not define it. */
  isStatic(name: string): boolean {
    return !this.entries.has(name) && this.deps.registry.get(name) !== undefined;
  }

  /**
   * What `create` (no definition yet) or `update` would do with `input`, without doing it: throws as they would for
   * an invalid definition; 'unchanged' when the definition would stay as it is (same watches, options and state).
   */
  preview(input: DynamicAccountInput): 'create' | 'update' | 'unchanged' {
    const entry = this.entries.get(input.name);
    const { def, kubeconfig } = this.definitionFrom(input, entry, entry?.def.updatedAt ?? 0);
    if (!entry) return 'create';
    const same =
      wireJson(entry.def, entry.kubeconfig) === wireJson(def, kubeconfig) &&
      optionsJson(entry.def) === optionsJson(def) &&
      entry.def.enabled === def.enabled;
    return same ? 'unchanged' : 'update';
  }

  async remove(name: string, who: string): Promise<void> {
    await this.sync();
    const entry = this.entries.get(name);
    if (!entry) {
      if (this.deps.registry.get(name)) {
        throw new ScaleAgentError(
          'CONFLICT',
          `account ${name} is configured on its agent, not dynamic; remove it there`,
        );
      }
      throw new ScaleAgentError('NOT_FOUND', `Account does not exist (name: ${name})`);
    }
    if (!(await this.deps.store.delete(name, entry.generation))) throw await this.changedMeanwhile(name);
    this.entries.delete(name);
    // Held through a peer: that replica tells its agent and drops the account when it follows the store.
    if (!this.heldByPeer(name)) await this.withdraw(name);
    this.assignments.delete(name);
    this.deps.audit.record({ who, what: 'dynamic account deleted', account: name, result: 'ok' });
  }

  async setState(name: string, state: 'ACTIVE' | 'INACTIVE', who: string): Promise<DynamicAccountView> {
    await this.sync();
    const entry = this.entries.get(name);
    if (!entry) throw new ScaleAgentError('NOT_FOUND', `Account does not exist or is not dynamic (name: ${name})`);
    const def = { ...entry.def, enabled: state === 'ACTIVE', updatedAt: Date.now() };
    // A manual activation resets the failure counter (as in the reference product).
    if (state === 'ACTIVE') Object.assign(def, { failedCount: 0, errorMessage: '' });
    const generation = await this.persist(def, entry.kubeconfig, entry.generation);
    this.entries.set(name, { ...entry, def, generation });
    this.deps.audit.record({
      who,
      what: `dynamic account ${state === 'ACTIVE' ? 'activated' : 'deactivated'}`,
      account: name,
      result: 'ok',
    });
    if (this.heldByPeer(name)) {
      // Followed by the replica its agent streams to (followChange).
    } else if (state === 'ACTIVE') this.place(name);
    else await this.withdraw(name);
    return this.view(name)!;
  }

  views(): DynamicAccountView[] {
    return [...this.entries.keys()].sort().map((n) => this.view(n)!);
  }

  view(name: string): DynamicAccountView | undefined {
    const entry = this.entries.get(name);
    if (!entry) return undefined;
    const d = entry.def;
    const reg = this.deps.registry.get(name);
    let state: DynamicState;
    let error = d.errorMessage;
    // Held by an agent streaming here, or to a peer replica (its lease, as the registry reads it).
    const held = reg?.sessionId !== undefined || this.heldByPeer(name);
    if (!d.enabled) state = 'INACTIVE';
    else if (reg && held) {
      state = reg.state === 'FAILED' ? 'FAILED' : 'ACTIVE';
      if (reg.state === 'FAILED') error = reg.reported?.error ?? error;
    } else if (error && this.liveAgent(this.assignments.get(name))) state = 'FAILED';
    else {
      state = 'ORPHANED';
      if (!error && !this.liveAgent(this.assignments.get(name))) {
        error = `no connected agent${d.zoneId ? ` in zone ${d.zoneId}` : ''} may serve this account`;
      }
    }
    return {
      name,
      dynamic: true,
      zoneId: d.zoneId,
      state,
      error_message: error,
      failed_count: d.failedCount,
      errorMessage: error,
      failedCount: d.failedCount,
      agentId: reg && held ? reg.record.agentId : (this.assignments.get(name) ?? ''),
      source: d.source,
      kubeconfigFile: d.kubeconfigFile,
      context: d.context,
      ...recordedOptions(d),
      lastUpdated: Math.max(d.updatedAt, reg?.lastUpdated ?? 0),
      createdAt: d.createdAt,
    };
  }

  // ---------------------------------------------------------------------------------------------------------
  // SessionGate
  // ---------------------------------------------------------------------------------------------------------

  identify(call: ServerDuplexStream<unknown, unknown>): Identity {
    return streamIdentity(call, this.deps.agentTokens);
  }

  check(session: GatedSession, name: string): GateVerdict {
    const entry = this.entries.get(name);
    if (!entry) {
      const v = this.deps.policy.authorize(session.identity, name);
      return v.ok ? v : { ok: false, code: 'unauthorized', reason: v.reason };
    }
    const refuse = (reason: string, code: 'unauthorized' | 'dynamic' = 'dynamic'): GateVerdict => ({
      ok: false,
      code,
      reason,
    });
    const d = entry.def;
    if (!d.enabled) return refuse(`dynamic account ${name} is INACTIVE`);
    if (d.zoneId && d.zoneId !== session.zone) {
      return refuse(
        `dynamic account ${name} belongs to zone ${d.zoneId}, this agent is in zone ${session.zone || 'none'}`,
      );
    }
    const v = this.deps.policy.mayServeDynamic(session.identity, name, d.zoneId);
    if (!v.ok) return refuse(v.reason, 'unauthorized');
    const assigned = this.assignments.get(name);
    if (assigned && assigned !== session.agentId && this.liveAgent(assigned)) {
      return refuse(`dynamic account ${name} is assigned to agent ${assigned}`);
    }
    this.assignments.set(name, session.agentId);
    return { ok: true };
  }

  rejected(session: GatedSession, name: string): void {
    let set = this.refused.get(session.id);
    if (!set) this.refused.set(session.id, (set = new Set()));
    set.add(name);
  }

  /** After Welcome: hand the new agent the dynamic accounts waiting for one, and drop the ones it may not keep. */
  welcomed(session: GatedSession): void {
    const definitions: DynamicAccount[] = [];
    for (const [name, entry] of this.entries) {
      if (!entry.def.enabled || this.deps.registry.get(name)?.sessionId) continue;
      if (!this.eligible(session, entry.def)) continue;
      const assigned = this.assignments.get(name);
      if (assigned && assigned !== session.agentId && this.liveAgent(assigned)) continue;
      this.assignments.set(name, session.agentId);
      definitions.push(this.wire(entry));
    }
    const removed = [...(this.refused.get(session.id) ?? [])].filter((n) => !this.entries.get(n)?.def.enabled);
    this.refused.delete(session.id);
    if (definitions.length === 0 && removed.length === 0) return;
    this.send(session, definitions, removed);
  }

  status(session: GatedSession, status: AccountStatus): void {
    const entry = this.entries.get(status.account);
    if (!entry || this.assignments.get(status.account) !== session.agentId) return;
    const failed = status.state === ProtoAccountState.ACCOUNT_STATE_FAILED;
    const error = failed ? status.error.slice(0, 4096) : '';
    if (!failed && !entry.def.errorMessage) return;
    if (failed && error === entry.def.errorMessage) return;
    const def = { ...entry.def, errorMessage: error, failedCount: entry.def.failedCount + (failed ? 1 : 0) };
    const written = { ...entry, def };
    this.entries.set(def.name, written);
    this.deps.audit.record({
      who: session.identity.name,
      what: 'dynamic account status',
      account: def.name,
      result: failed ? 'failed' : 'active',
      reason: error || undefined,
    });
    // Conditional like every write: an operator's change meanwhile wins, and the agent's next report is written then.
    this.persist(def, entry.kubeconfig, entry.generation).then(
      (generation) => {
        if (this.entries.get(def.name) === written) written.generation = generation;
      },
      (e: unknown) =>
        this.deps.log.warn({ account: def.name, err: (e as Error).message }, 'cannot persist dynamic account status'),
    );
  }

  closed(session: GatedSession): void {
    this.refused.delete(session.id);
  }

  // ---------------------------------------------------------------------------------------------------------

  /** An agent streaming to a peer replica holds the account (live lease). */
  private heldByPeer(name: string): boolean {
    const reg = this.deps.registry.get(name);
    return !reg?.sessionId && reg?.peer !== undefined && reg.state !== 'ORPHANED';
  }

  private eligible(session: GatedSession, d: DynamicDefinition): boolean {
    if (!session.open || !session.agentId) return false;
    if (d.zoneId && d.zoneId !== session.zone) return false;
    return this.deps.policy.mayServeDynamic(session.identity, d.name, d.zoneId).ok;
  }

  private liveSessions(): GatedSession[] {
    return [...this.deps.sessions()].filter((s) => s.open && s.agentId);
  }

  private liveAgent(agentId: string | undefined): GatedSession | undefined {
    if (!agentId) return undefined;
    return this.liveSessions().find((s) => s.agentId === agentId);
  }

  /** The agent of this replica an ACTIVE definition goes to: the one holding it, else assigned it, else the least loaded. */
  private target(name: string, def: DynamicDefinition): GatedSession | undefined {
    const sessions = this.liveSessions();
    const holder = this.deps.registry.get(name)?.sessionId;
    let target = sessions.find((s) => s.id === holder) ?? this.liveAgent(this.assignments.get(name));
    if (target && !this.eligible(target, def)) target = undefined;
    if (!target) {
      const load = (s: GatedSession) => [...this.assignments.values()].filter((a) => a === s.agentId).length;
      target = sessions.filter((s) => this.eligible(s, def)).sort((a, b) => load(a) - load(b))[0];
    }
    return target;
  }

  /** Sends an ACTIVE definition to `chosen`, else to target()'s choice. */
  private place(name: string, chosen?: GatedSession): void {
    const entry = this.entries.get(name);
    if (!entry?.def.enabled) return;
    // Its agent is on a peer: that replica places it again when it follows the change (followChange).
    if (this.heldByPeer(name)) return;
    const target = chosen ?? this.target(name, entry.def);
    if (!target) {
      this.deps.log.warn(
        { account: name, zoneId: entry.def.zoneId },
        'no connected agent may serve the dynamic account yet',
      );
      return;
    }
    this.assignments.set(name, target.agentId);
    this.deps.audit.record({
      who: 'plugin-server',
      what: 'dynamic account assigned',
      account: name,
      result: 'ok',
      agentId: target.agentId,
    });
    this.send(target, [this.wire(entry)], []);
  }

  /** Stops the account on whichever agent has it and drops it from the registry and the cache. */
  private async withdraw(name: string): Promise<void> {
    const holder = this.deps.registry.get(name)?.sessionId;
    const targets = new Set<GatedSession>();
    for (const s of this.liveSessions()) {
      if (s.id === holder || s.agentId === this.assignments.get(name)) targets.add(s);
    }
    for (const s of targets) this.send(s, [], [name]);
    this.assignments.delete(name);
    await this.deps.registry.forget(name);
  }

  private send(session: GatedSession, definitions: DynamicAccount[], removed: string[]): void {
    this.deps.log.info(
      { agentId: session.agentId, added: definitions.map((d) => d.account?.name), removed },
      'dynamic accounts sent to agent',
    );
    session.sendAccountsChanged({ added: [], removed, definitions, offerAgain: [], handOver: [] });
  }

  private wire(entry: Entry): DynamicAccount {
    const d = entry.def;
    return {
      account: {
        name: d.name,
        cluster: undefined,
        ...optionsToWire(d),
      },
      kubeconfig: Buffer.from(entry.kubeconfig ?? '', 'utf8'),
      kubeconfigFile: d.kubeconfigFile ?? '',
      context: d.context ?? '',
      serviceAccount: d.source === 'serviceAccount',
      onlyNamespacedResources: d.onlyNamespacedResources,
    };
  }

  private definitionFrom(
    input: DynamicAccountInput,
    previous: Entry | undefined,
    now: number,
  ): { def: DynamicDefinition; kubeconfig: string | undefined } {
    const sources = (['kubeconfigContents', 'kubeconfigFile', 'serviceAccount'] as const).filter((k) =>
      k === 'serviceAccount' ? input.serviceAccount === true : input[k] !== undefined && input[k] !== '',
    );
    if (sources.length > 1 || (sources.length === 0 && !previous)) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        'give exactly one of kubeconfigContents, kubeconfigFile, serviceAccount',
        {
          details: [{ path: '/', message: 'exactly one of kubeconfigContents, kubeconfigFile, serviceAccount' }],
        },
      );
    }
    if (input.namespaces?.length && input.omitNamespaces?.length) {
      throw new ScaleAgentError('INVALID_INPUT', 'namespaces and omitNamespaces are exclusive', {
        details: [{ path: '/omitNamespaces', message: 'namespaces and omitNamespaces are exclusive' }],
      });
    }
    if (input.kinds?.length && input.omitKinds?.length) {
      throw new ScaleAgentError('INVALID_INPUT', 'kinds and omitKinds are exclusive', {
        details: [{ path: '/omitKinds', message: 'kinds and omitKinds are exclusive' }],
      });
    }
    const source = sources[0] ?? previous!.def.source;
    if (source === 'kubeconfigContents' && !this.deps.secrets) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        'kubeconfigContents needs dynamicAccounts.encryptionKeyFile or encryptionKeyEnv in the plugin-server config',
      );
    }
    const prev = previous?.def;
    const def: DynamicDefinition = {
      name: input.name,
      zoneId: input.zoneId ?? prev?.zoneId ?? '',
      source,
      kubeconfigFile: source === 'kubeconfigFile' ? (input.kubeconfigFile ?? prev?.kubeconfigFile) : undefined,
      context: input.context ?? prev?.context,
      ...updatedOptions(input, prev),
      onlyNamespacedResources: input.onlyNamespacedResources ?? prev?.onlyNamespacedResources ?? false,
      enabled: input.state ? input.state === 'ACTIVE' : (prev?.enabled ?? true),
      errorMessage: prev?.errorMessage ?? '',
      failedCount: prev?.failedCount ?? 0,
      createdAt: prev?.createdAt ?? now,
      updatedAt: now,
    };
    const kubeconfig = source === 'kubeconfigContents' ? input.kubeconfigContents || previous?.kubeconfig : undefined;
    return { def, kubeconfig };
  }

  /** Writes the definition if the store still has it at `expected`; else 409 (another replica changed it first). */
  private async persist(
    def: DynamicDefinition,
    kubeconfig: string | undefined,
    expected: ExpectedGeneration,
  ): Promise<number> {
    const sealedKubeconfig =
      kubeconfig !== undefined && this.deps.secrets ? this.deps.secrets.seal(kubeconfig, def.name) : undefined;
    const generation = await this.deps.store.save({ definition: def, sealedKubeconfig }, expected);
    if (generation === undefined) throw await this.changedMeanwhile(def.name);
    return generation;
  }

  /** The 409 of a conditional write that lost, after taking in what won (the caller may read it and retry). */
  private async changedMeanwhile(name: string): Promise<ScaleAgentError> {
    await this.sync().catch(() => undefined);
    return new ScaleAgentError(
      'CONFLICT',
      `dynamic account ${name} was ${this.entries.has(name) ? 'changed' : 'created or deleted'} through another ` +
        'replica while this request was applied; nothing was written: read it again and retry',
    );
  }
}

/** The placement a definition records, comparable. */
function placementOf(d: DynamicDefinition | undefined): string {
  return d?.placement ? `${d.placement.replica}\u0000${d.placement.agentId}` : '';
}

/** What the agent watches for a definition: a change here means a relist. */
function wireJson(d: DynamicDefinition, kubeconfig: string | undefined): string {
  return JSON.stringify([
    d.source,
    d.kubeconfigFile,
    d.context,
    d.namespaces,
    d.omitNamespaces,
    d.kinds,
    d.omitKinds,
    d.onlyNamespacedResources,
    d.zoneId,
    kubeconfig,
  ]);
}

/**
 * What the account record carries besides the watches (its lists): a change re-announces the account, without a
 * relist. Definitions stored before some options existed read as their defaults.
 */
function optionsJson(d: DynamicDefinition): string {
  const recorded: Partial<RecordedOptions> = recordedOptions(d);
  for (const k of OPTION_LISTS) delete recorded[k];
  return JSON.stringify(recorded);
}
