import { ScaleAgentError } from '../../shared/errors.js';
import type { NormalizedOperation } from '../../shared/ops/index.js';
import {
  formatIssues,
  parseOperations,
  unknownOperationIssue,
  validateAccounts,
  type Endpoint,
} from './descriptions/index.js';
import type { AccountRegistry } from '../accounts.js';
import { accountFilter, requireWritable } from '../auth/spinnaker-accounts.js';

export interface OperationInputDeps {
  accounts: AccountRegistry;
  /** Dynamic accounts the registry may not hold yet (defined, no agent connected). */
  dynamic?: { has(name: string): boolean };
}

/**
 * An Orca operations body as Clouddriver checks it synchronously: parsed, then every account known and every
 * namespace one it manages; a 400 with one `errors` line per problem otherwise. Accounts outside the caller's
 * X-SPINNAKER-ACCOUNTS are refused (403) before anything says whether they exist. Shared by `POST /kubernetes/ops`
 * and `POST /kubernetes/task/{id}/restart`.
 */
export function operationsFromBody(
  body: unknown,
  endpoint: Endpoint,
  deps: OperationInputDeps,
  headers: Record<string, string | string[] | undefined>,
  operationName?: string,
): NormalizedOperation[] {
  const parsed = parseOperations(body, { endpoint, ...(operationName ? { operationName } : {}) });
  if (parsed.ok) {
    requireWritable(
      accountFilter(headers),
      parsed.operations.map((op) => op.account),
    );
  }
  const issues = parsed.ok
    ? validateAccounts(parsed.operations, {
        knownAccounts: (name) => deps.accounts.get(name) !== undefined || (deps.dynamic?.has(name) ?? false),
        accountScope: (name) => {
          const r = deps.accounts.get(name)?.record;
          return r ? { namespaces: r.namespaces, omitNamespaces: r.omitNamespaces } : undefined;
        },
      })
    : parsed.errors;
  if (!parsed.ok || issues.length > 0) {
    const unknown = unknownOperationIssue(issues);
    throw new ScaleAgentError('INVALID_INPUT', unknown ? unknown.message : 'Validation Failed', {
      details: formatIssues(issues).map((message) => ({ message })),
    });
  }
  return parsed.operations;
}
