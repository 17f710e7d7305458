/**
 * `scale-agent accounts migrate`: Clouddriver's Kubernetes accounts (source.ts) → the plugin-server's dynamic
 * accounts through Armory's bulk endpoint `POST /armory/accounts` (`?dryRun=true` for a dry run, so the plan comes
 * from the server that would carry it out). The endpoint is all or nothing; items it refuses (a name held by an
 * agent's own config, a definition it finds invalid) are reported and the rest is sent again without them.
 */
import { ScaleAgentError } from '../../shared/errors.js';
import type { AccountDefinition, SourceAccount } from '../../shared/clouddriver-accounts.js';
import {
  countActions,
  planMigration,
  type AccountOutcome,
  type MigrateAction,
  type PlannedAccount,
} from '../../shared/migration-plan.js';
import { pluginServerRequest } from '../plugin-server-request.js';

export type { AccountOutcome, MigrateAction };

export interface MigrationSummary {
  url: string;
  dryRun: boolean;
  accounts: AccountOutcome[];
  counts: Record<MigrateAction, number>;
}

export interface MigrateOptions {
  url: string;
  token?: string | undefined;
  pattern?: RegExp | undefined;
  dryRun: boolean;
  /** zoneId for accounts whose definition has none. */
  zoneId?: string | undefined;
  /** State for new accounts (the endpoint's default: INACTIVE). */
  state?: 'ACTIVE' | 'INACTIVE' | undefined;
  /** kubeconfigFile for accounts with no kubeconfig source; `{name}` is replaced by the account name. */
  kubeconfigFile?: string | undefined;
  timeoutMs?: number;
}

const ACTION_OF = { created: 'create', updated: 'update', unchanged: 'unchanged' } as const;

export async function migrateAccounts(source: SourceAccount[], opts: MigrateOptions): Promise<MigrationSummary> {
  const base = opts.url.replace(/\/+$/, '');
  const { outcomes, pending } = planMigration(source, {
    patterns: opts.pattern ? [opts.pattern] : undefined,
    patternSetting: '--pattern',
    zoneId: opts.zoneId,
    state: opts.state,
    kubeconfigFile: opts.kubeconfigFile,
    kubeconfigFileSetting: '--kubeconfig-file',
  });
  for (const chunk of chunks(pending)) await send(base, opts, chunk);
  return { url: base, dryRun: opts.dryRun, accounts: outcomes, counts: countActions(outcomes) };
}

type Pending = PlannedAccount;

/** The endpoint takes at most 1,000 items and 1 MiB a request; stay well inside both. */
const CHUNK_ITEMS = 500;
const CHUNK_BYTES = 512 * 1024;

function chunks(items: Pending[]): Pending[][] {
  const out: Pending[][] = [];
  let current: Pending[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = JSON.stringify(item.definition).length;
    if (current.length && (current.length >= CHUNK_ITEMS || bytes + size > CHUNK_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += size;
  }
  if (current.length) out.push(current);
  return out;
}

/** One request's worth; items the server refuses are taken out and the rest sent again (one round per refusal). */
async function send(base: string, opts: MigrateOptions, items: Pending[]): Promise<void> {
  let batch = items;
  while (batch.length > 0) {
    const answer = await post(
      base,
      opts,
      batch.map((p) => p.definition),
    );
    if ('results' in answer) {
      for (const r of answer.results) {
        const item = batch[r.index];
        if (item) item.outcome.action = ACTION_OF[r.outcome];
      }
      return;
    }
    const refused = answer.refused.filter((r) => r.index < batch.length);
    if (refused.length === 0) {
      throw new ScaleAgentError('INVALID_INPUT', `POST ${base}/armory/accounts: ${answer.status} ${answer.message}`);
    }
    for (const r of refused) batch[r.index]!.outcome.reason = r.message;
    const out = new Set(refused.map((r) => r.index));
    batch = batch.filter((_, i) => !out.has(i));
  }
}

type PostAnswer =
  | { results: { index: number; name: string; outcome: 'created' | 'updated' | 'unchanged' }[] }
  | { status: number; message: string; refused: { index: number; message: string }[] };

async function post(base: string, opts: MigrateOptions, items: AccountDefinition[]): Promise<PostAnswer> {
  const path = `/armory/accounts${opts.dryRun ? '?dryRun=true' : ''}`;
  const res = await pluginServerRequest(base, path, {
    method: 'POST',
    body: items,
    token: opts.token,
    timeoutMs: opts.timeoutMs ?? 30_000,
    scope: 'admin',
  });
  const text = res.text;
  let body: { message?: string; errors?: string[]; results?: unknown } | undefined;
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = undefined;
  }
  if (res.ok && body && Array.isArray(body.results)) return { results: body.results as never };
  if ((res.status === 400 || res.status === 409) && body?.message) {
    // The endpoint names refused items `item N: ...` (errors[]); a schema failure names `body/N/field`.
    const lines = body.errors?.length ? body.errors : [body.message];
    const refused = lines.flatMap((message) => {
      const n = /^item (\d+)/.exec(message)?.[1] ?? /^body\/(\d+)/.exec(message)?.[1];
      return n === undefined ? [] : [{ index: Number(n), message }];
    });
    return { status: res.status, message: body.message, refused };
  }
  throw new ScaleAgentError('UNAVAILABLE', `POST ${base}${path}: ${res.status} ${text.slice(0, 200)}`);
}

/** The text view: one line per account, then the counts. */
export function renderMigration(s: MigrationSummary): string {
  const verb: Record<MigrateAction, string> = s.dryRun
    ? { create: 'would create', update: 'would update', unchanged: 'unchanged', skip: 'skip', refuse: 'refused' }
    : { create: 'created', update: 'updated', unchanged: 'unchanged', skip: 'skipped', refuse: 'refused' };
  const width = Math.max(...Object.values(verb).map((v) => v.length));
  const lines = s.accounts.map((a) => {
    const extra = [a.reason, a.ignored?.length ? `ignored keys: ${a.ignored.join(', ')}` : undefined]
      .filter(Boolean)
      .join('; ');
    return `${verb[a.action].padEnd(width)}  ${a.name || '(no name)'}${extra ? `  ${extra}` : ''}`;
  });
  const c = s.counts;
  const changes = s.dryRun
    ? `dry run, nothing changed: ${c.create} to create, ${c.update} to update`
    : `${c.create} created, ${c.update} updated`;
  const total = `${changes}, ${c.unchanged} unchanged, ${c.skip} skipped, ${c.refuse} refused (${s.url})`;
  return `${[...lines, total].join('\n')}\n`;
}
