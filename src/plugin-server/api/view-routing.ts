import type { FastifyRequest } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import type { AccountRegistry } from '../accounts.js';
import { readableAccounts } from '../auth/read-access.js';
import type { ObjectReads } from '../cache/store.js';
import type { Allows } from '../views/load.js';
import { toResource, type Resource } from '../views/resource.js';
import { resolveKind, splitFullName } from '../views/kinds.js';

/** What the read views need: the cache, the accounts, and live container logs. */
export interface ViewRouteDeps {
  store: ObjectReads;
  accounts: AccountRegistry;
  /** One container's log, read live through the account's agent (ops/live-read.ts). */
  logs?: (account: string, location: string, pod: string, container: string | undefined) => Promise<string>;
}

export type Req<P = Record<string, string>, Q = Record<string, string | undefined>> = FastifyRequest<{
  Params: P;
  Querystring: Q;
}>;

export function bool(value: string | undefined, def: boolean): boolean {
  if (value === undefined || value === '') return def;
  return value.toLowerCase() === 'true';
}

export function byName(a: { name: string }, b: { name: string }): number {
  const x = a.name.toLowerCase();
  const y = b.name.toLowerCase();
  return x < y ? -1 : x > y ? 1 : 0;
}

/** "replicaSet backend-v014" → its kind and name; 400 naming the parameter when it is not "kind name". */
export function fullName(value: string, what: string): { kind: string; group: string | undefined; name: string } {
  const parts = splitFullName(value);
  if (!parts) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `${what} must be "<kind> <name>", e.g. "replicaSet web-v001" (got: ${value})`,
      {
        details: [{ path: what, message: 'must be "<kind> <name>"' }],
      },
    );
  }
  return { ...resolveKind(parts[0]), name: parts[1] };
}

/** The checks every view route makes: which accounts the caller sees, the provider, one object by its name. */
export function viewContext(deps: ViewRouteDeps) {
  /** The accounts the request may read (auth/read-access.ts) among those this server holds. */
  const allowsOf = async (request: FastifyRequest): Promise<Allows> => {
    const readable = await readableAccounts(request);
    return (account) => readable(account) && deps.accounts.get(account) !== undefined;
  };
  const providerOr404 = (provider: string) => {
    if (provider !== 'kubernetes') throw new ScaleAgentError('NOT_FOUND', `Unknown cloud provider: ${provider}`);
  };
  const objectAt = async (
    account: string,
    namespace: string,
    value: string,
    what: string,
    allows: Allows,
  ): Promise<Resource | undefined> => {
    const want = fullName(value, what);
    const o = allows(account)
      ? await deps.store.get({ account, group: want.group, kind: want.kind, namespace, name: want.name })
      : undefined;
    return o?.json ? toResource(o) : undefined;
  };
  return { allowsOf, providerOr404, objectAt };
}
