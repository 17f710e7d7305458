import type { FastifyInstance, FastifyRequest } from 'fastify';
import { mayRead, type FiatPermissions } from './fiat.js';

/** Which accounts a request may read. */
export type Allows = (account: string) => boolean;

/** Spinnaker's services name the user they act for in this header (kork's AuthenticatedRequest). */
export const SPINNAKER_USER_HEADER = 'x-spinnaker-user';

/** Clouddriver's Fiat filter names a request without a user this way, and asks Fiat about it like any user. */
export const ANONYMOUS = 'anonymous';

export interface ReadAccessDeps {
  /** spinnaker.fiat: per-user READ from Fiat. Absent: no per-user read filtering, as Clouddriver without Fiat. */
  fiat?: FiatPermissions;
  /** The accounts this server answers for: what a request may be asking about, so a view lacking one is refreshed. */
  accounts: () => string[];
}

declare module 'fastify' {
  interface FastifyInstance {
    readAccess?: ReadAccessDeps;
  }
}

const ALL: Allows = () => true;
const resolved = new WeakMap<FastifyRequest, Promise<Allows>>();

/** The user a Spinnaker request acts for: its X-SPINNAKER-USER, else anonymous. */
export function spinnakerUser(headers: Record<string, string | string[] | undefined>): string {
  const v = headers[SPINNAKER_USER_HEADER];
  const user = (Array.isArray(v) ? v[0] : v)?.trim();
  return user ? user : ANONYMOUS;
}

/** Every route that reads an account asks readableAccounts(); this sets what it answers from. */
export function installReadAccess(app: FastifyInstance, deps: ReadAccessDeps): void {
  app.decorate('readAccess', deps);
}

/**
 * The one decision of which accounts a request may read (docs/spinnaker.md, "Accounts and Fiat"), asked by every
 * read route and view: with Fiat, READ for the request's user (Clouddriver's `hasPermission(account, 'ACCOUNT',
 * 'READ')`); without, every account. Decided once per request. Fails (503) when Fiat cannot answer: reads of agent
 * accounts fail closed.
 */
export function readableAccounts(request: FastifyRequest): Promise<Allows> {
  let out = resolved.get(request);
  if (!out) {
    out = decide(request);
    resolved.set(request, out);
  }
  return out;
}

async function decide(request: FastifyRequest): Promise<Allows> {
  const deps = request.server.readAccess;
  if (!deps?.fiat) return ALL;
  const view = await deps.fiat.viewOf(spinnakerUser(request.headers), deps.accounts());
  return (account) => mayRead(view, account);
}
