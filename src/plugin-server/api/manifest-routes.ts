import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import type { AccountRegistry } from '../accounts.js';
import { readableAccounts } from '../auth/read-access.js';
import type { CachedObject, ObjectReads } from '../cache/store.js';
import { eventsAbout, eventsIn } from '../views/events.js';
import { resolveKind, splitFullName } from '../views/kinds.js';
import { manifestContainer } from './manifest.js';

export interface ManifestRouteDeps {
  store: ObjectReads;
  accounts: AccountRegistry;
  /** Live read through the account's agent for kinds the cache does not hold (ops/live-read.ts). */
  liveManifest?: (
    account: string,
    location: string,
    kindSpec: string,
    resolved: { kind: string; group: string | undefined },
    name: string,
  ) => Promise<CachedObject | undefined>;
}

type ManifestQuery = { includeEvents?: string };

/**
 * Clouddriver's `GET /manifests/{account}/{location}/{kind name}`, from the cache, else live through the agent. An
 * account the caller may not read answers as a manifest that does not exist (auth/read-access.ts).
 */
export const manifestRoutes: FastifyPluginAsync<ManifestRouteDeps> = async (app, deps) => {
  const getManifest = async (
    request: FastifyRequest,
    account: string,
    location: string,
    fullName: string,
    includeEvents: boolean,
  ) => {
    const notFound = () =>
      new ScaleAgentError(
        'NOT_FOUND',
        `Manifest (account: ${account}, location: ${location}, name: ${fullName}) not found`,
      );
    if (!(await readableAccounts(request))(account) || !deps.accounts.get(account)) throw notFound();
    const parts = splitFullName(fullName);
    if (!parts) throw notFound();
    const { kind, group } = resolveKind(parts[0]);
    // The namespace's Events are read beside the object, not after it: on a SQL store the two round trips overlap
    // (p50 of a MySQL-backed read 15-20% lower). Their failure is handled here (a missing object still answers 404)
    // and rethrown where awaited.
    const events = includeEvents && kind !== 'Event' ? eventsIn(deps.store, account, location) : undefined;
    events?.catch(() => undefined);
    const o =
      (await deps.store.get({ account, group, kind, namespace: location, name: parts[1] })) ??
      (await deps.liveManifest?.(account, location, parts[0], { kind, group }, parts[1]));
    if (!o) throw notFound();
    const container = manifestContainer(o);
    if (events)
      container.events = eventsAbout(
        o,
        await (o.namespace === location ? events : eventsIn(deps.store, account, o.namespace)),
      );
    return container;
  };
  // Clouddriver's default is includeEvents=true (Gate sends none, so Deck shows events); Orca sends false.
  const withEvents = (q: ManifestQuery) => q.includeEvents?.toLowerCase() !== 'false';
  app.get<{ Params: { account: string; location: string; name: string }; Querystring: ManifestQuery }>(
    '/manifests/:account/:location/:name',
    async (request) => {
      const { account, location, name } = request.params;
      return getManifest(request, account, location === '_' ? '' : location, name, withEvents(request.query));
    },
  );
  app.get<{ Params: { account: string; name: string }; Querystring: ManifestQuery }>(
    '/manifests/:account/:name',
    async (request) => getManifest(request, request.params.account, '', request.params.name, withEvents(request.query)),
  );
};
