/**
 * A STAND-IN for Clouddriver's account list (no Clouddriver can run on these machines): `GET /credentials` and
 * `GET /credentials?expand=true` as clouddriver-web's CredentialsController answers them, from accounts a test sets
 * and changes, written after Clouddriver's account views (`name`, `type`, `cloudProvider`, `environment`,
 * `accountType`, `permissions`, ... and, expanded, the Kubernetes account's own keys; never its kubeconfig). It can
 * be made to fail (`failWith`), and counts the reads it answered, so a test can wait for the next one.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpStandIn } from './http-stand-in.js';

/** A Kubernetes account as a test defines it: its name and the keys `expand=true` shows. */
export type StandInAccount = { name: string; cloudProvider?: string } & Record<string, unknown>;

export class ClouddriverStandIn extends HttpStandIn {
  /** The accounts Clouddriver has now; change it between reads. */
  accounts: StandInAccount[] = [];
  /** Set: every /credentials read answers this status with a kork-style error body. */
  failWith: number | undefined;
  /** /credentials reads answered so far (failed ones too). */
  reads = 0;

  protected handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://stand-in');
    const json = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.method !== 'GET' || url.pathname !== '/credentials') {
      json(404, { status: 404, error: 'Not Found', message: `${req.method} ${url.pathname}` });
      return;
    }
    this.reads++;
    if (this.failWith !== undefined) {
      json(this.failWith, { timestamp: Date.now(), status: this.failWith, error: 'Internal Server Error' });
      return;
    }
    const expand = url.searchParams.get('expand') === 'true';
    json(
      200,
      this.accounts.map(({ name, cloudProvider = 'kubernetes', ...keys }) => ({
        name,
        type: cloudProvider,
        cloudProvider,
        environment: name,
        accountType: name,
        providerVersion: 'v2',
        requiredGroupMembership: [],
        challengeDestructiveActions: false,
        primaryAccount: false,
        ...(expand ? keys : {}),
      })),
    );
  }
}
