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
  /** Dynamic accounts the registry may not hold yet (defined, no agent connected); lookup reads the store. */
  dynamic?: { has(name: string): boolean; lookup?(name: string): Promise<unknown> };
}

/**
 * An Orca operations body as Clouddriver checks it synchronously: parsed, then every account known and every
 * namespace one it manages; a 400 with one `errors` line per problem otherwise. Accounts outside the caller's
 * X-SPINNAKER-ACCOUNTS are refused (403) before anything says whether they exist. Shared by `POST /kubernetes/ops`
 * and `POST /kubernetes/task/{id}/restart`.
 */
export async function operationsFromBody(
  body: unknown,
  endpoint: Endpoint,
  deps: OperationInputDeps,
  headers: Record<string, string | string[] | undefined>,
  operationName?: string,
): Promise<NormalizedOperation[]> {
  const parsed = parseOperations(body, { endpoint, ...(operationName ? { operationName } : {}) });
  if (parsed.ok) {
    requireWritable(
      accountFilter(headers),
      parsed.operations.map((op) => op.account),
    );
    // An account registered through a peer replica (or defined there) since this one last looked is in the store:
    // read through before calling it unknown (docs/architecture.md, "Replicas").
    for (const name of new Set(parsed.operations.map((op) => op.account))) {
      if (deps.accounts.get(name) || deps.dynamic?.has(name)) continue;
      await deps.accounts.lookup(name);
      await deps.dynamic?.lookup?.(name);
    }
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
