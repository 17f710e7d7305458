import type { FastifyPluginAsync } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import type { AccountRegistry } from '../accounts.js';
import { readableAccounts } from '../auth/read-access.js';
import type { ObjectReads } from '../cache/store.js';
import { credentialsDetail, credentialsSummary } from './credentials.js';

export interface CredentialRouteDeps {
  store: ObjectReads;
  accounts: AccountRegistry;
}

/**
 * Clouddriver's account reads (`GET /credentials`, `/credentials/{name}`) for Fiat, Gate and Deck. Reads of an
 * account the caller may not read answer as for an account that does not exist, so they neither show it nor tell
 * that it exists (auth/read-access.ts).
 */
export const credentialRoutes: FastifyPluginAsync<CredentialRouteDeps> = async (app, deps) => {
  const liveNamespaces = async (account: string): Promise<string[]> =>
    (await deps.store.list({ account, group: '', kind: 'Namespace' })).map((o) => o.name);
  /** The cached Namespaces of every account at once (one index read, not one query per account). */
  const allNamespaces = async (): Promise<Map<string, string[]>> => {
    const out = new Map<string, string[]>();
    for (const k of await deps.store.searchKeys({ group: '', kind: 'Namespace' }, 'namespace', '')) {
      const list = out.get(k.account);
      if (list) list.push(k.name);
      else out.set(k.account, [k.name]);
    }
    return out;
  };

  app.get<{ Querystring: { expand?: string } }>('/credentials', async (request) => {
    const expand = request.query.expand === 'true';
    const allows = await readableAccounts(request);
    const namespaces = expand ? await allNamespaces() : undefined;
    const out = [];
    for (const a of deps.accounts.list()) {
      if (!allows(a.record.name)) continue;
      out.push(
        namespaces ? credentialsDetail(a.record, namespaces.get(a.record.name) ?? []) : credentialsSummary(a.record),
      );
    }
    return out;
  });
  app.get<{ Params: { account: string } }>('/credentials/:account', async (request) => {
    const name = request.params.account;
    const a = (await readableAccounts(request))(name) ? deps.accounts.get(name) : undefined;
    if (!a) throw new ScaleAgentError('NOT_FOUND', `Account does not exist (name: ${name})`);
    return credentialsDetail(a.record, await liveNamespaces(a.record.name));
  });
};
