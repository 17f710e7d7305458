/**
 * Automatic migration (`dynamicAccounts.scan`, Armory's `namePatterns` scanning, docs/armory-migration.md): every
 * `frequencySeconds`, Clouddriver's Kubernetes accounts whose name matches a pattern and that are not accounts here
 * yet become dynamic accounts, planned as `scale-agent accounts migrate` plans them (shared/migration-plan.ts) and
 * written as the bulk endpoint writes them (migrate.ts), each account on its own.
 *
 * Only new names are taken: an account already here (moved earlier, by hand, by an agent's own config) is never
 * changed, so a round that finds nothing new writes nothing, and an operator's later change to a moved account
 * stays. Replicas sharing a store each scan; no lease is needed because every create is a conditional insert in
 * the store (the definition must not exist yet): when two replicas take the same account in the same moment, one
 * insert wins and the other writes nothing, and the loser reports the account as taken by its peer.
 */
import { accountsFromClouddriver, accountsFromCredentials, namePattern } from '../../shared/clouddriver-accounts.js';
import type { SourceAccount } from '../../shared/clouddriver-accounts.js';
import type { PluginServerConfig as PluginServerConfigSchema } from '../../shared/config-types/plugin-server-config.js';
import { ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import type { Counter, Gauge } from 'prom-client';
import { planMigration, type AccountOutcome } from '../../shared/migration-plan.js';
import type { UpstreamClient } from '../upstream/client.js';
import { UpstreamUnreachable } from '../upstream/client.js';
import type { DynamicAccounts } from './dynamic.js';
import { migrateAccounts } from './migrate.js';

export type ScanConfig = PluginServerConfigSchema['dynamicAccounts']['scan'];

/** The audit log's `who` for what the scan writes. */
const WHO = 'account-scan';

/** One account a round took (or, in a dry run, would take) or refused, and why. */
export interface ScannedAccount {
  name: string;
  action: 'create' | 'refuse';
  /** For a create: the pattern that took it; for a refusal: what is wrong, with where it is in the source. */
  reason: string;
  where: string;
  /** Keys of the Clouddriver definition with no equivalent here. */
  ignored?: string[];
}

export interface ScanRound {
  startedAt: string;
  finishedAt: string;
  /** The /credentials read. */
  source: string;
  dryRun: boolean;
  /**
   * `error`: Clouddriver could not be read (or answered something else than a list of accounts), and nothing
   * changed; or the store failed part way, and the accounts listed were moved before it did.
   */
  result: 'ok' | 'error';
  error?: string;
  accounts: ScannedAccount[];
  counts: {
    /** Kubernetes accounts whose name matches a pattern. */
    matched: number;
    /** Migrated this round (dry run: would be). */
    created: number;
    refused: number;
    /** Matching, but already an account here: left as it is. */
    present: number;
  };
}

/** metrics.ts's accountScan. */
export interface ScanMetrics {
  rounds: Counter<'result'>;
  accounts: Counter<'outcome'>;
  refused: Gauge;
}

export interface AccountScanDeps {
  config: ScanConfig;
  dynamic: DynamicAccounts;
  /** Clouddriver's accounts (readerFor). */
  read: () => Promise<SourceAccount[]>;
  /** What `read` reads, for the report and the logs. */
  source: string;
  log: Logger;
  metrics: ScanMetrics;
  now?: () => number;
}

/** Reads `clouddriverUrl`, or else the upstream this server fronts through its connection pool. */
export function readerFor(
  config: ScanConfig,
  upstream: UpstreamClient | undefined,
): { source: string; read: () => Promise<SourceAccount[]> } {
  const timeoutMs = config.timeoutSeconds * 1000;
  if (config.clouddriverUrl || !upstream) {
    const url = config.clouddriverUrl ?? '';
    return {
      source: `${url.replace(/\/+$/, '')}/credentials?expand=true`,
      read: () => accountsFromClouddriver(url, timeoutMs),
    };
  }
  const source = `${upstream.baseUrl.replace(/\/+$/, '')}/credentials?expand=true`;
  return {
    source,
    read: async () => {
      let res: { status: number; body: unknown };
      try {
        res = await upstream.getJson('/credentials?expand=true', {}, timeoutMs);
      } catch (e) {
        throw e instanceof UpstreamUnreachable ? e.toScaleAgentError(upstream.baseUrl) : e;
      }
      if (res.status !== 200) throw new ScaleAgentError('UNAVAILABLE', `GET ${source}: ${res.status}`);
      return accountsFromCredentials(res.body, source);
    },
  };
}

/** Whether a name is one the scan moves to agents (front mode lets such a name be the upstream's too). */
export function scanClaims(config: ScanConfig): (name: string) => boolean {
  const patterns = config.namePatterns.map(namePattern);
  return (name) => patterns.some((p) => p.test(name));
}

export class AccountScan {
  private readonly patterns: { source: string; re: RegExp }[];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<ScanRound> | undefined;
  private stopped = false;
  private lastRound: ScanRound | undefined;
  /** Each refused account's last reason, so a refusal is logged when it appears or changes, not every round. */
  private refusedBefore = new Map<string, string>();
  private readonly now: () => number;

  constructor(private readonly deps: AccountScanDeps) {
    this.patterns = deps.config.namePatterns.map((source) => ({ source, re: namePattern(source) }));
    this.now = deps.now ?? Date.now;
  }

  get enabled(): boolean {
    return this.patterns.length > 0;
  }

  /** The last round's report (GET /admin/account-scan). */
  last(): ScanRound | undefined {
    return this.lastRound;
  }

  /** First round now, then one `frequencySeconds` after each round ends (rounds never overlap). */
  start(): void {
    if (!this.enabled) return;
    this.deps.log.info(
      {
        namePatterns: this.deps.config.namePatterns,
        source: this.deps.source,
        everySeconds: this.deps.config.frequencySeconds,
        dryRun: this.deps.config.dryRun,
      },
      'automatic migration: scanning Clouddriver for accounts to move to agents',
    );
    const next = (): void => {
      if (this.stopped) return;
      void this.round().finally(() => {
        if (this.stopped) return;
        this.timer = setTimeout(next, this.deps.config.frequencySeconds * 1000);
        this.timer.unref();
      });
    };
    next();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One round; never throws (an error is the round's result, logged and counted). */
  round(): Promise<ScanRound> {
    this.running ??= this.scan().finally(() => (this.running = undefined));
    return this.running;
  }

  private async scan(): Promise<ScanRound> {
    const { config, log, metrics } = this.deps;
    const startedAt = new Date(this.now()).toISOString();
    const round: ScanRound = {
      startedAt,
      finishedAt: startedAt,
      source: this.deps.source,
      dryRun: config.dryRun,
      result: 'ok',
      accounts: [],
      counts: { matched: 0, created: 0, refused: 0, present: 0 },
    };
    let read = false;
    try {
      const source = await this.deps.read();
      read = true;
      // Against the store, so an account a peer replica (or a REST call) moved since the last poll counts as here.
      await this.deps.dynamic.sync();
      await this.migrate(source, round);
    } catch (e) {
      round.result = 'error';
      round.error = e instanceof Error ? e.message : String(e);
      log.warn(
        { err: round.error, source: this.deps.source, ...round.counts },
        read
          ? 'automatic migration: round failed part way (the store?); what it moved stays; next round as scheduled'
          : 'automatic migration: round failed, nothing changed; next round as scheduled',
      );
    }
    round.finishedAt = new Date(this.now()).toISOString();
    metrics.rounds.inc({ result: round.result });
    // What a round that failed part way did still counts; the gauge says what the last whole round refused.
    metrics.accounts.inc({ outcome: round.dryRun ? 'would_create' : 'created' }, round.counts.created);
    metrics.accounts.inc({ outcome: 'refused' }, round.counts.refused);
    if (round.result === 'ok') metrics.refused.set(round.counts.refused);
    this.lastRound = round;
    return round;
  }

  private async migrate(source: SourceAccount[], round: ScanRound): Promise<void> {
    const { config, dynamic, log } = this.deps;
    const plan = planMigration(source, {
      patterns: this.patterns.map((p) => p.re),
      patternSetting: 'dynamicAccounts.scan.namePatterns',
      zoneId: config.zoneId,
      state: config.state,
      kubeconfigFile: config.kubeconfigFile,
      kubeconfigFileSetting: 'dynamicAccounts.scan.kubeconfigFile',
    });
    const here = (name: string): boolean => dynamic.has(name) || dynamic.isStatic(name);
    const matched = plan.outcomes.filter((o) => o.action !== 'skip');
    round.counts.matched = matched.length;
    round.counts.present = matched.filter((o) => here(o.name)).length;
    // Refused by the plan (no kubeconfig source, a key of the wrong type, ...), unless it is here already.
    const refusals = matched.filter((o) => o.action === 'refuse' && !plan.pending.some((p) => p.outcome === o));
    for (const o of refusals) if (!here(o.name)) this.refuse(round, o, o.reason ?? 'refused');
    const fresh = plan.pending.filter((p) => !here(p.definition.name));
    for (let i = 0; i < fresh.length; i += config.batchSize) {
      const batch = fresh.slice(i, i + config.batchSize);
      const report = await migrateAccounts(
        dynamic,
        batch.map((p) => p.definition),
        WHO,
        { dryRun: config.dryRun, partial: true, createOnly: true },
      );
      for (const r of report.results) {
        const planned = batch[r.index]!;
        if (r.outcome === 'refused' && dynamic.has(r.name)) {
          // Lost the conditional insert to a peer replica's scan (or a REST call): the account has moved.
          round.counts.present++;
        } else if (r.outcome === 'refused') {
          this.refuse(round, planned.outcome, r.reason ?? 'refused');
        } else if (r.outcome === 'created') {
          this.take(round, planned.outcome);
        } else {
          throw new Error(`account ${r.name}: ${r.outcome} by a create-only migration`);
        }
      }
    }
    // A refusal that is gone (fixed, or the account left Clouddriver) is logged again if it comes back.
    const now = new Set(round.accounts.filter((a) => a.action === 'refuse').map((a) => a.name));
    for (const name of this.refusedBefore.keys()) if (!now.has(name)) this.refusedBefore.delete(name);
    if (round.counts.created || round.counts.refused) {
      log.info({ ...round.counts, dryRun: config.dryRun, source: this.deps.source }, 'automatic migration: round done');
    }
  }

  private take(round: ScanRound, o: AccountOutcome): void {
    const pattern = this.patterns.find((p) => p.re.test(o.name))?.source ?? '';
    const account: ScannedAccount = {
      name: o.name,
      action: 'create',
      reason: `name matches ${pattern}`,
      where: o.where,
    };
    if (o.ignored?.length) account.ignored = o.ignored;
    round.accounts.push(account);
    round.counts.created++;
    this.deps.log.info(
      { account: o.name, pattern, state: this.deps.config.state, ignoredKeys: o.ignored, dryRun: round.dryRun },
      round.dryRun
        ? 'automatic migration: would move account to agents (dry run)'
        : 'automatic migration: account moved to agents',
    );
  }

  private refuse(round: ScanRound, o: AccountOutcome, reason: string): void {
    round.accounts.push({ name: o.name, action: 'refuse', reason, where: o.where });
    round.counts.refused++;
    if (this.refusedBefore.get(o.name) !== reason) {
      this.refusedBefore.set(o.name, reason);
      this.deps.log.warn({ account: o.name, reason, where: o.where }, 'automatic migration: account not migrated');
    }
  }
}
