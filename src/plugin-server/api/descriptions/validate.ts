import type { ValidationIssue } from './issues.js';
import { effectiveNamespace } from './parse.js';
import type { NormalizedOperation } from '../../../shared/ops/types.js';

/** What the server knows about an account's namespace limits (from its agent's Hello / the account config). */
export interface AccountScope {
  namespaces?: readonly string[];
  omitNamespaces?: readonly string[];
}

export interface AccountCheck {
  /** True when the account is registered (held by an agent, or waiting for one). */
  knownAccounts: (name: string) => boolean;
  /** Namespace limits of a known account; undefined = unrestricted. */
  accountScope?: (name: string) => AccountScope | undefined;
}

/**
 * The checks Clouddriver runs synchronously against its credentials: the account must exist (`notFound`), and
 * every namespace an operation touches — a manifest's, after `namespaceOverride` — must be one the account
 * manages (`wrongNamespace`) and not one it omits (`omittedNamespace`). Operations are indexed as posted.
 */
export function validateAccounts(operations: readonly NormalizedOperation[], check: AccountCheck): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  operations.forEach((op, index) => {
    const add = (field: string, reason: ValidationIssue['reason'], message: string): void => {
      issues.push({ index, operation: op.type, field, reason, message });
    };
    if (!check.knownAccounts(op.account)) {
      add('account', 'notFound', `credentials not found (name: ${op.account})`);
      return;
    }
    const scope = check.accountScope?.(op.account);
    if (!scope) return;
    const seen = new Set<string>();
    for (const { field, namespace } of namespacesOf(op)) {
      if (!namespace || seen.has(`${field}\0${namespace}`)) continue;
      seen.add(`${field}\0${namespace}`);
      if (scope.namespaces && scope.namespaces.length > 0 && !scope.namespaces.includes(namespace)) {
        add(
          field,
          'wrongNamespace',
          `account ${op.account} does not manage namespace "${namespace}" (it manages ${scope.namespaces.join(', ')})`,
        );
      } else if (scope.omitNamespaces?.includes(namespace)) {
        add(field, 'omittedNamespace', `account ${op.account} omits namespace "${namespace}"`);
      }
    }
  });
  return issues;
}

function namespacesOf(op: NormalizedOperation): { field: string; namespace: string | undefined }[] {
  switch (op.type) {
    case 'deployManifest': {
      const override = op.payload.namespaceOverride;
      return op.payload.manifests.map((m, i) => ({
        field: override ? 'namespaceOverride' : `manifests[${i}].metadata.namespace`,
        namespace: effectiveNamespace(m, override),
      }));
    }
    case 'cleanupArtifacts':
      return op.payload.manifests.map((m, i) => ({
        field: `manifests[${i}].metadata.namespace`,
        namespace: m.metadata.namespace,
      }));
    case 'runJob':
      return [{ field: 'namespace', namespace: op.payload.namespace ?? op.payload.manifest.metadata.namespace }];
    case 'deleteManifest':
    case 'liveList':
    case 'liveLogs':
      return [{ field: 'location', namespace: op.payload.location }];
    default:
      return [{ field: 'location', namespace: op.payload.target.location }];
  }
}
