import { ScaleAgentError } from '../../shared/errors.js';

/**
 * The accounts a Spinnaker caller may write, as Gate and Orca forward them: kork's AuthenticatedRequest puts the
 * accounts Fiat grants the user WRITE on (Gate's AllowedAccountsSupport, computed at login) into
 * `X-SPINNAKER-ACCOUNTS` (comma-separated) on every call to Clouddriver. Clouddriver checks operations against it;
 * so does this server, and only operations: it is a WRITE list, so reads are decided per user through Fiat
 * (auth/read-access.ts). Without the header (Fiat disabled, or a caller that forwards no user) nothing is refused
 * here and access is what the REST authentication (auth/admin-auth.ts) already allows. What is enforced where:
 * docs/spinnaker.md, "Accounts and Fiat".
 */
export const SPINNAKER_ACCOUNTS_HEADER = 'x-spinnaker-accounts';

export interface AccountFilter {
  /** The request named its accounts: writes to any other are refused. */
  restricted: boolean;
  allows(account: string): boolean;
}

const UNRESTRICTED: AccountFilter = { restricted: false, allows: () => true };

/**
 * The filter of one request. Header names are matched case-insensitively (Node lower-cases them); repeated header
 * lines are joined as HTTP joins them. A header present but empty restricts to no account: a user Fiat grants no
 * account must not see every one.
 */
export function accountFilter(headers: Record<string, string | string[] | undefined>): AccountFilter {
  let value: string | string[] | undefined;
  for (const [name, v] of Object.entries(headers)) {
    if (name.toLowerCase() === SPINNAKER_ACCOUNTS_HEADER && v !== undefined) value = v;
  }
  if (value === undefined) return UNRESTRICTED;
  const names = new Set(
    (Array.isArray(value) ? value : [value])
      .flatMap((v) => v.split(','))
      .map((n) => n.trim())
      .filter((n) => n.length > 0),
  );
  return { restricted: true, allows: (account) => names.has(account) };
}

/** Refuses (403, SA_ERR_FORBIDDEN) a write that touches an account outside the caller's accounts. */
export function requireWritable(filter: AccountFilter, accounts: Iterable<string>): void {
  if (!filter.restricted) return;
  const refused = [...new Set(accounts)].filter((a) => !filter.allows(a));
  if (refused.length === 0) return;
  throw new ScaleAgentError(
    'FORBIDDEN',
    `Access denied to account${refused.length > 1 ? 's' : ''} ${refused.join(', ')}: not in ${SPINNAKER_ACCOUNTS_HEADER}`,
    { details: refused.map((a) => ({ path: 'account', message: `account ${a} is not among the caller's accounts` })) },
  );
}
