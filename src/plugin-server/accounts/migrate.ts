import { ScaleAgentError, type ErrorDetail } from '../../shared/errors.js';
import type { DynamicAccountInput, DynamicAccounts, DynamicAccountView } from './dynamic.js';

export type MigrationOutcome = 'created' | 'updated' | 'unchanged' | 'refused';

export interface MigrationResult {
  index: number;
  name: string;
  /** `refused` only in a partial migration, with `reason`. */
  outcome: MigrationOutcome;
  reason?: string | undefined;
  /** The account after the change; absent in a dry run for an account that does not exist yet. */
  account?: DynamicAccountView | undefined;
}

export interface MigrationReport {
  dryRun: boolean;
  results: MigrationResult[];
}

const PAST: Record<'create' | 'update' | 'unchanged', Exclude<MigrationOutcome, 'refused'>> = {
  create: 'created',
  update: 'updated',
  unchanged: 'unchanged',
};

/**
 * Armory's bulk "migrate" (`POST /armory/accounts`): many definitions at once, new ones INACTIVE unless their
 * `state` says otherwise (so an operator can look before activating, as in the reference). All or nothing: every
 * item is checked first, and any problem refuses the whole batch naming the item's index, so a retried request
 * never leaves half a migration behind. A definition identical to the stored one changes nothing (idempotent).
 *
 * `partial` (the automatic migration, accounts/account-scan.ts): each item stands alone instead; one that would
 * refuse the batch, or whose write loses to another replica's, is a `refused` result with its reason, and the
 * others are still migrated. `createOnly`: a name that is already an account is refused too, never updated (the
 * scan takes new accounts only, and a peer replica's scan may have created it since this one looked).
 */
export async function migrateAccounts(
  dynamic: DynamicAccounts,
  items: DynamicAccountInput[],
  who: string,
  opts: { dryRun: boolean; partial?: boolean; createOnly?: boolean },
): Promise<MigrationReport> {
  // Planned against the store's definitions, not this replica's last poll of them.
  await dynamic.sync();
  const seen = new Map<string, number>();
  const invalid: ErrorDetail[] = [];
  const conflicts: ErrorDetail[] = [];
  /** What each refused item would be told on its own (the batch's messages name it by index). */
  const refused: MigrationResult[] = [];
  const planned: { input: DynamicAccountInput; action: 'create' | 'update' | 'unchanged' }[] = [];
  for (const [i, item] of items.entries()) {
    const first = seen.get(item.name);
    if (first !== undefined) {
      invalid.push({ path: `/${i}/name`, message: `item ${i}: name ${item.name} is also item ${first}'s` });
      refused.push({ index: i, name: item.name, outcome: 'refused', reason: 'listed twice' });
      continue;
    }
    seen.set(item.name, i);
    if (dynamic.isStatic(item.name)) {
      const reason = `account ${item.name} is configured on its agent, not dynamic; it cannot be migrated`;
      conflicts.push({ path: `/${i}/name`, message: `item ${i}: ${reason}` });
      refused.push({ index: i, name: item.name, outcome: 'refused', reason });
      continue;
    }
    if (opts.createOnly && dynamic.has(item.name)) {
      const reason = `account ${item.name} already exists`;
      conflicts.push({ path: `/${i}/name`, message: `item ${i}: ${reason}` });
      refused.push({ index: i, name: item.name, outcome: 'refused', reason });
      continue;
    }
    const input = dynamic.has(item.name) ? item : { ...item, state: item.state ?? 'INACTIVE' };
    try {
      planned.push({ input, action: dynamic.preview(input) });
    } catch (e) {
      if (!(e instanceof ScaleAgentError)) throw e;
      const fields = e.details.map((d) => d.path).filter((p) => p && p !== '/');
      const field = fields[0] ? ` ${fields[0].slice(1)}` : '';
      invalid.push({ path: `/${i}${fields[0] ?? ''}`, message: `item ${i} (${item.name})${field}: ${e.message}` });
      refused.push({
        index: i,
        name: item.name,
        outcome: 'refused',
        reason: `${field.trim() || 'definition'}: ${e.message}`,
      });
    }
  }
  if (!opts.partial && invalid.length) {
    throw new ScaleAgentError('INVALID_INPUT', invalid.map((d) => d.message).join('; '), { details: invalid });
  }
  if (!opts.partial && conflicts.length) {
    throw new ScaleAgentError('CONFLICT', conflicts.map((d) => d.message).join('; '), { details: conflicts });
  }
  const results: MigrationResult[] = refused;
  for (const [index, { input, action }] of planned.entries()) {
    const at = seen.get(input.name) ?? index;
    let account: DynamicAccountView | undefined;
    try {
      if (opts.dryRun || action === 'unchanged') account = dynamic.view(input.name);
      else if (action === 'create') account = await dynamic.create(input, who);
      else account = await dynamic.update(input, who);
    } catch (e) {
      // A conditional write that lost to another replica's (or a definition created meanwhile) writes nothing.
      if (!opts.partial || !(e instanceof ScaleAgentError) || e.kind !== 'CONFLICT') throw e;
      results.push({ index: at, name: input.name, outcome: 'refused', reason: e.message });
      continue;
    }
    results.push({ index: at, name: input.name, outcome: PAST[action], account });
  }
  results.sort((a, b) => a.index - b.index);
  return { dryRun: opts.dryRun, results };
}
