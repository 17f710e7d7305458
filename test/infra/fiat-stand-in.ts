/**
 * A STAND-IN for Spinnaker's Fiat: Fiat cannot run on these machines, so this small HTTP server answers the one
 * call the plugin-server makes, `GET /authorize/{userId}`, in the shape of Fiat's UserPermission.View
 * (fiat-core's UserPermission.java and resources/Account.java, as its AuthorizeController serves it): `name`,
 * `accounts` as `[{name, authorizations: ["READ", "WRITE", ...]}]`, `applications`, `serviceAccounts`, `roles`,
 * `buildServices`, `extensionResources`, `admin`, `accountManager`, `legacyFallback`,
 * `allowAccessToUnknownApplications`; 404 with kork's error body for a user it does not know. Written after Fiat's
 * sources, not captured from a running Fiat. Tests set each user's grants, count lookups, and can stop it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpStandIn } from './http-stand-in.js';

export type FiatAuthorization = 'READ' | 'WRITE' | 'EXECUTE' | 'CREATE';

export interface StandInUser {
  accounts?: Record<string, FiatAuthorization[]>;
  admin?: boolean;
}

export class FiatStandIn extends HttpStandIn {
  /** The users Fiat knows, by id; any other user is answered 404, as Fiat answers "user not found". */
  readonly users = new Map<string, StandInUser>();
  /** Every user id looked up, in order, and the X-SPINNAKER-USER each lookup carried. */
  readonly lookups: { user: string; header: string | undefined }[] = [];
  /** Set: every lookup answers this status (a Fiat that is up but failing). */
  failWith: number | undefined;

  lookupsOf(user: string): number {
    return this.lookups.filter((l) => l.user === user).length;
  }

  protected handle(req: IncomingMessage, res: ServerResponse): void {
    const m = /^\/authorize\/([^/?]+)$/.exec((req.url ?? '').split('?')[0] ?? '');
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' || !m) return json(404, { status: 404, error: 'Not Found', message: 'no route' });
    const id = decodeURIComponent(m[1]!);
    const header = req.headers['x-spinnaker-user'];
    this.lookups.push({ user: id, header: Array.isArray(header) ? header[0] : header });
    if (this.failWith !== undefined) {
      return json(this.failWith, { status: this.failWith, error: 'Error', message: 'stand-in failure' });
    }
    const user = this.users.get(id);
    if (!user) {
      return json(404, { timestamp: Date.now(), status: 404, error: 'Not Found', message: `user not found: ${id}` });
    }
    json(200, {
      name: id,
      accounts: Object.entries(user.accounts ?? {}).map(([name, authorizations]) => ({ name, authorizations })),
      applications: [],
      serviceAccounts: [],
      roles: [],
      buildServices: [],
      extensionResources: {},
      admin: user.admin ?? false,
      accountManager: false,
      legacyFallback: false,
      allowAccessToUnknownApplications: false,
    });
  }
}
