import { ScaleAgentError, type ErrorDetail } from '../../shared/errors.js';
import type { DynamicAccountInput, DynamicAccounts, DynamicAccountView } from './dynamic.js';

export type MigrationOutcome = 'created' | 'updated' | 'unchanged';

export interface MigrationResult {
  index: number;
  name: string;
  outcome: MigrationOutcome;
  /** The account after the change; absent in a dry run for an account that does not exist yet. */
  account?: DynamicAccountView | undefined;
}

export interface MigrationReport {
  dryRun: boolean;
  results: MigrationResult[];
}

const PAST: Record<'create' | 'update' | 'unchanged', MigrationOutcome> = {
  create: 'created',
  update: 'updated',
  unchanged: 'unchanged',
};

/**
 * Armory's bulk "migrate" (`POST /armory/accounts`): many definitions at once, new ones INACTIVE unless their
 * `state` says otherwise (so an operator can look before activating, as in the reference). All or nothing: every
 * item is checked first, and any problem refuses the whole batch naming the item's index, so a retried request
 * never leaves half a migration behind. A definition identical to the stored one changes nothing (idempotent).
 */
export async function migrateAccounts(
  dynamic: DynamicAccounts,
  items: DynamicAccountInput[],
  who: string,
  opts: { dryRun: boolean },
): Promise<MigrationReport> {
  // Planned against the store's definitions, not this replica's last poll of them.
  await dynamic.sync();
  const seen = new Map<string, number>();
  const invalid: ErrorDetail[] = [];
  const conflicts: ErrorDetail[] = [];
  const planned: { input: DynamicAccountInput; action: 'create' | 'update' | 'unchanged' }[] = [];
  for (const [i, item] of items.entries()) {
    const first = seen.get(item.name);
    if (first !== undefined) {
      invalid.push({ path: `/${i}/name`, message: `item ${i}: name ${item.name} is also item ${first}'s` });
      continue;
    }
    seen.set(item.name, i);
    if (dynamic.isStatic(item.name)) {
      conflicts.push({
        path: `/${i}/name`,
        message: `item ${i}: account ${item.name} is configured on its agent, not dynamic; it cannot be migrated`,
      });
      continue;
    }
    const input = dynamic.has(item.name) ? item : { ...item, state: item.state ?? 'INACTIVE' };
    try {
      planned.push({ input, action: dynamic.preview(input) });
    } catch (e) {
      if (!(e instanceof ScaleAgentError)) throw e;
      const fields = e.details.map((d) => d.path).filter((p) => p && p !== '/');
      invalid.push({
        path: `/${i}${fields[0] ?? ''}`,
        message: `item ${i} (${item.name})${fields[0] ? ` ${fields[0].slice(1)}` : ''}: ${e.message}`,
      });
    }
  }
  if (invalid.length) {
    throw new ScaleAgentError('INVALID_INPUT', invalid.map((d) => d.message).join('; '), { details: invalid });
  }
  if (conflicts.length) {
    throw new ScaleAgentError('CONFLICT', conflicts.map((d) => d.message).join('; '), { details: conflicts });
  }
  const results: MigrationResult[] = [];
  for (const [index, { input, action }] of planned.entries()) {
    let account: DynamicAccountView | undefined;
    if (opts.dryRun || action === 'unchanged') account = dynamic.view(input.name);
    else if (action === 'create') account = await dynamic.create(input, who);
    else account = await dynamic.update(input, who);
    results.push({ index: seen.get(input.name) ?? index, name: input.name, outcome: PAST[action], account });
  }
  return { dryRun: opts.dryRun, results };
}
