/**
 * A STAND-IN for HashiCorp Vault, which cannot be built here: only what scale-agent's vault engine calls, answered in
 * Vault's documented shapes (developer.hashicorp.com/vault/api-docs):
 * - POST /v1/auth/<mount>/login `{"role","jwt"}` (Kubernetes auth) → `{"auth": {"client_token", "lease_duration",
 *   "renewable", "policies", ...}}`; a wrong role or JWT → 400 `{"errors": ["invalid role name ..."]}` or 403
 *   `{"errors": ["permission denied"]}`.
 * - GET /v1/<kv-mount>/data/<path> with `X-Vault-Token` (KV version 2) → `{"data": {"data": {...}, "metadata":
 *   {"version", "created_time", "deletion_time", "destroyed", "custom_metadata"}}, "lease_duration": 0, ...}`; an
 *   unknown or revoked token → 403 `{"errors": ["permission denied"]}`; no secret → 404 `{"errors": []}`.
 * It validates JWTs by comparing them with the ones a test registers, where real Vault sends a TokenReview to the
 * API server.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { HttpStandIn } from './http-stand-in.js';

export class VaultStandIn extends HttpStandIn {
  /** mount/path → key → value (KV v2), with a version per write. */
  private readonly kv = new Map<string, { data: Record<string, string>; version: number }>();
  private readonly tokens = new Set<string>();
  /** Kubernetes auth: mount → role → the JWT that may log in as it. */
  private readonly roles = new Map<string, Map<string, string>>();
  /** Every request: method, path and whether it carried a token (never the token). */
  readonly requests: { method: string; path: string; token: boolean }[] = [];

  /** A token that may read every secret (what `vault token create` would give a policy allowing the reads). */
  issueToken(): string {
    const t = `hvs.${randomUUID().replaceAll('-', '')}`;
    this.tokens.add(t);
    return t;
  }

  revokeAll(): void {
    this.tokens.clear();
  }

  allowKubernetesLogin(mount: string, role: string, jwt: string): void {
    const m = this.roles.get(mount) ?? new Map<string, string>();
    m.set(role, jwt);
    this.roles.set(mount, m);
  }

  write(mount: string, path: string, data: Record<string, string>): void {
    const key = `${mount}/${path}`;
    this.kv.set(key, { data: { ...data }, version: (this.kv.get(key)?.version ?? 0) + 1 });
  }

  protected async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://vault');
    const token = req.headers['x-vault-token'];
    this.requests.push({ method: req.method ?? '', path: url.pathname, token: typeof token === 'string' });
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const login = /^\/v1\/auth\/(.+)\/login$/.exec(url.pathname);
    if (req.method === 'POST' && login) {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      let body: { role?: string; jwt?: string } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        return send(400, { errors: ['failed to parse JSON input'] });
      }
      const roles = this.roles.get(login[1] ?? '');
      if (!roles) return send(400, { errors: [`no handler for route "auth/${login[1]}/login"`] });
      const expected = roles.get(body.role ?? '');
      if (expected === undefined) return send(400, { errors: [`invalid role name "${body.role ?? ''}"`] });
      if (body.jwt !== expected) return send(403, { errors: ['permission denied'] });
      const clientToken = this.issueToken();
      return send(200, {
        request_id: randomUUID(),
        lease_id: '',
        renewable: false,
        lease_duration: 0,
        data: null,
        wrap_info: null,
        warnings: null,
        auth: {
          client_token: clientToken,
          accessor: randomUUID(),
          policies: ['default', 'scale-agent'],
          token_policies: ['default', 'scale-agent'],
          metadata: { role: body.role },
          lease_duration: 3600,
          renewable: true,
          entity_id: randomUUID(),
          token_type: 'service',
          orphan: true,
        },
      });
    }
    const read = /^\/v1\/([^/]+)\/data\/(.+)$/.exec(url.pathname);
    if (req.method === 'GET' && read) {
      if (typeof token !== 'string' || !this.tokens.has(token)) return send(403, { errors: ['permission denied'] });
      const entry = this.kv.get(`${read[1]}/${read[2]}`);
      if (!entry) return send(404, { errors: [] });
      return send(200, {
        request_id: randomUUID(),
        lease_id: '',
        renewable: false,
        lease_duration: 0,
        data: {
          data: entry.data,
          metadata: {
            created_time: new Date().toISOString(),
            custom_metadata: null,
            deletion_time: '',
            destroyed: false,
            version: entry.version,
          },
        },
        wrap_info: null,
        warnings: null,
        auth: null,
      });
    }
    send(404, { errors: [] });
  }
}
