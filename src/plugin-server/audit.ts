import type { Logger } from '../shared/logging.js';

export interface AuditEntry {
  /** The identity that acted: certificate URI/DNS/subject, `token:<name>`, `network:<ip>` or `anonymous`. */
  who: string;
  /** What was attempted: `POST /armory/accounts/dynamic`, `register`, `assign`, `delete`, ... */
  what: string;
  account?: string | undefined;
  /** `ok`, `rejected`, `denied`, `failed`, or an HTTP status. */
  result: string;
  reason?: string | undefined;
  [extra: string]: unknown;
}

/**
 * The audit trail: one structured line per operation and per account change, always at info level and with
 * `audit: true` so a log pipeline can route it on its own. Never carries request bodies (they may hold kubeconfigs).
 */
export class AuditLog {
  private readonly log: Logger;

  constructor(log: Logger) {
    this.log = log.child({ audit: true });
  }

  record(entry: AuditEntry): void {
    this.log.info(entry, `audit: ${entry.what} ${entry.account ?? ''} ${entry.result}`.replace(/\s+/g, ' ').trim());
  }
}
