/**
 * Which of Clouddriver's accounts move to agents, and as what definitions: the one plan both the one-shot
 * `scale-agent accounts migrate` (sent over REST) and the plugin-server's automatic migration (written to the store
 * by the scan, accounts/account-scan.ts) carry out, so both take and refuse the same accounts for the same reasons.
 */
import { fromClouddriverAccount, type AccountDefinition, type SourceAccount } from './clouddriver-accounts.js';
import { ScaleAgentError } from './errors.js';

export type MigrateAction = 'create' | 'update' | 'unchanged' | 'skip' | 'refuse';

export interface AccountOutcome {
  name: string;
  action: MigrateAction;
  /** Why it is skipped or refused (or, for an automatic migration, why it was taken). */
  reason?: string;
  where: string;
  /** Source keys that have no equivalent here (caching policies, docker registries, ...). */
  ignored?: string[];
}

export interface PlanOptions {
  /** Names to take: the whole name must match one of them (namePattern). Absent: every account. */
  patterns?: readonly RegExp[] | undefined;
  /** The setting that gives the patterns, for the skip reason (`--pattern`, `dynamicAccounts.scan.namePatterns`). */
  patternSetting: string;
  /** zoneId for accounts whose definition has none. */
  zoneId?: string | undefined;
  /** State for new accounts (the bulk endpoint's default: INACTIVE). */
  state?: 'ACTIVE' | 'INACTIVE' | undefined;
  /** kubeconfigFile for accounts with no kubeconfig source; `{name}` is replaced by the account name. */
  kubeconfigFile?: string | undefined;
  /** The setting that gives kubeconfigFile, for the refusal's fix (`--kubeconfig-file`, ...). */
  kubeconfigFileSetting: string;
}

/** An account the plan takes: its definition, and the outcome the caller fills in once it is sent. */
export interface PlannedAccount {
  definition: AccountDefinition;
  outcome: AccountOutcome;
}

export interface MigrationPlan {
  /** One per source account, in source order. */
  outcomes: AccountOutcome[];
  /** The accounts to send (their outcome is still `refuse` until the server says what it did). */
  pending: PlannedAccount[];
}

/**
 * Kubernetes accounts whose name matches, converted; the others skipped, and those that cannot be converted (no
 * name, twice in the source, a key of the wrong type, no kubeconfig source) refused with where and why.
 */
export function planMigration(source: readonly SourceAccount[], opts: PlanOptions): MigrationPlan {
  const outcomes: AccountOutcome[] = [];
  const pending: PlannedAccount[] = [];
  const names = new Set<string>();
  for (const s of source) {
    const rawName = (s.raw as { name?: unknown } | null)?.name;
    const name = typeof rawName === 'string' ? rawName : '';
    const outcome: AccountOutcome = { name, action: 'refuse', where: s.where };
    outcomes.push(outcome);
    if (s.type !== 'kubernetes') {
      Object.assign(outcome, { action: 'skip', reason: `not a Kubernetes account (${s.type || 'no type'})` });
      continue;
    }
    if (name && opts.patterns && !opts.patterns.some((p) => p.test(name))) {
      Object.assign(outcome, { action: 'skip', reason: `name does not match ${opts.patternSetting}` });
      continue;
    }
    if (names.has(name)) {
      outcome.reason = `${s.where}: account ${name} is defined twice`;
      continue;
    }
    names.add(name);
    let definition: AccountDefinition;
    try {
      const converted = fromClouddriverAccount(s.raw, s.where);
      definition = converted.definition;
      if (converted.ignored.length) outcome.ignored = converted.ignored;
    } catch (e) {
      if (!(e instanceof ScaleAgentError)) throw e;
      outcome.reason = e.message;
      continue;
    }
    // Clouddriver renders the cluster's namespaces when none are configured; with omitNamespaces they are derived.
    if (s.rendered && definition.omitNamespaces?.length) delete definition.namespaces;
    if (opts.zoneId && !definition.zoneId) definition.zoneId = opts.zoneId;
    if (opts.state && !definition.state) definition.state = opts.state;
    if (!definition.kubeconfigFile && !definition.kubeconfigContents && !definition.serviceAccount) {
      if (!opts.kubeconfigFile) {
        outcome.reason =
          `${s.where}: no kubeconfigFile, kubeconfigContents or serviceAccount` +
          (s.rendered ? " (Clouddriver's /credentials does not show them)" : '') +
          `; give ${opts.kubeconfigFileSetting}`;
        continue;
      }
      definition.kubeconfigFile = opts.kubeconfigFile.replaceAll('{name}', definition.name);
    }
    pending.push({ definition, outcome });
  }
  return { outcomes, pending };
}

/** Counts of each action, for summaries. */
export function countActions(outcomes: readonly AccountOutcome[]): Record<MigrateAction, number> {
  const counts = { create: 0, update: 0, unchanged: 0, skip: 0, refuse: 0 };
  for (const o of outcomes) counts[o.action]++;
  return counts;
}
