import { BlockList, isIPv4 } from 'node:net';
import type { FastifyReply, FastifyRequest, onRequestAsyncHookHandler, onResponseAsyncHookHandler } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import type { AuditLog } from '../audit.js';
import type { PluginServerConfig } from '../config.js';
import { ON_BEHALF_OF_HEADER, type PeerSecret } from './peer-secret.js';
import { bearerToken, TokenFile, type TokenScope } from './tokens.js';

/** Our own admin API (Armory-style and diagnostics); everything else is the Clouddriver-compatible surface. */
const ADMIN_PREFIXES = ['/armory', '/admin', '/agents'];
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * Who may call a group of routes: `clouddriver`, a valid token or (Spinnaker calls without one) a trusted network;
 * `admin`, a valid token only; `peer` (/internal/*), another replica holding the peer secret, nobody else.
 */
export type Surface = 'clouddriver' | 'admin' | 'peer';

export interface RequestPrincipal {
  who: string;
  scope: TokenScope | 'network' | 'open' | 'peer';
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: RequestPrincipal;
  }
}

function pathOf(url: string): string {
  const p = url.split('?')[0] ?? '/';
  // Fastify ignores duplicate and trailing slashes when routing; classify the same way.
  return p.replace(/\/{2,}/g, '/').replace(/(.)\/$/, '$1');
}

export function isAdminPath(path: string): boolean {
  return ADMIN_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`));
}

function trustedList(cidrs: string[]): BlockList {
  const list = new BlockList();
  for (const cidr of cidrs) {
    const [net, bits] = cidr.split('/') as [string, string];
    list.addSubnet(net, Number(bits), isIPv4(net) ? 'ipv4' : 'ipv6');
  }
  return list;
}

function fromTrusted(list: BlockList, ip: string): boolean {
  const v4 = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(ip)?.[1];
  if (v4 ?? isIPv4(ip)) return list.check(v4 ?? ip, 'ipv4');
  return list.check(ip, 'ipv6');
}

/** The hooks that authenticate the REST API, each added in the context whose routes it guards (api/http.ts). */
export interface RestAuth {
  /** onRequest of a context whose routes are all on one surface. */
  surface(surface: Surface): onRequestAsyncHookHandler;
  /**
   * onRequest of the root, for requests no route matched (no context holds them): admin (a 404, but only for callers
   * with a token), unless this server fronts a Clouddriver (upstream/front.ts), which answers them: then the
   * Clouddriver surface, unless their path is an admin path.
   */
  unmatched: onRequestAsyncHookHandler;
  /** onResponse of the root: every write goes to the audit log. */
  audit: onResponseAsyncHookHandler;
}

/**
 * Authentication of the REST API (http.auth): bearer tokens with `read` or `admin` scope; the Clouddriver
 * surface may be opened to trusted networks because Spinnaker calls it without tokens. 401 without a valid token,
 * 403 for a read-only token on a write. Without http.auth the API is open (development) and the server warns.
 * Every write and every refusal goes to the audit log. Which rule a request meets is the context of the route that
 * matched, not its URL, so encodings (/%61rmory) cannot dodge the rules.
 */
export function restAuth(
  config: PluginServerConfig['http'],
  audit: AuditLog,
  options: { proxiesUnmatched?: boolean; peer?: PeerSecret | undefined } = {},
): RestAuth {
  const auth = config.auth;
  const tokens = auth ? new TokenFile(auth.tokensFile, 'read') : undefined;
  const trusted = trustedList(auth?.trustedNetworks ?? []);

  const authenticate = (request: FastifyRequest, surface: Surface): RequestPrincipal => {
    if (surface === 'peer') return peerPrincipal(request, options.peer);
    if (!tokens) return { who: 'anonymous', scope: 'open' };
    const token = bearerToken(request.headers.authorization);
    if (token !== undefined) {
      const entry = tokens.lookup(token);
      if (!entry) throw new ScaleAgentError('UNAUTHENTICATED', 'the bearer token is not valid');
      const principal = { who: `token:${entry.name}`, scope: entry.scope };
      if (entry.scope !== 'admin' && !READ_METHODS.has(request.method)) {
        request.principal = principal;
        throw new ScaleAgentError('FORBIDDEN', `token ${entry.name} is read-only; ${request.method} needs admin`);
      }
      return principal;
    }
    if (surface === 'clouddriver' && fromTrusted(trusted, request.ip))
      return { who: `network:${request.ip}`, scope: 'network' };
    throw new ScaleAgentError('UNAUTHENTICATED', 'authentication required: send Authorization: Bearer <token>');
  };

  const check = (request: FastifyRequest, reply: FastifyReply, surface: Surface): void => {
    try {
      request.principal = authenticate(request, surface);
    } catch (e) {
      if (e instanceof ScaleAgentError) {
        audit.record({
          who: request.principal?.who ?? `anonymous@${request.ip}`,
          what: `${request.method} ${pathOf(request.url)}`,
          result: 'denied',
          reason: e.message,
          status: e.kind === 'FORBIDDEN' ? 403 : 401,
        });
        if (e.kind === 'UNAUTHENTICATED') void reply.header('www-authenticate', 'Bearer realm="scale-agent"');
      }
      throw e;
    }
  };

  return {
    surface: (surface) => async (request, reply) => check(request, reply, surface),
    unmatched: async (request, reply) => {
      if (request.routeOptions.url !== undefined) return;
      check(request, reply, options.proxiesUnmatched && !isAdminPath(pathOf(request.url)) ? 'clouddriver' : 'admin');
    },
    audit: async (request, reply) => {
      if (READ_METHODS.has(request.method) || reply.statusCode === 401 || reply.statusCode === 403) return;
      const params = (request.params ?? {}) as Record<string, unknown>;
      const body = request.body as Record<string, unknown> | undefined;
      const account = [params.name, params.account, body && !Array.isArray(body) ? body.name : undefined].find(
        (v): v is string => typeof v === 'string',
      );
      audit.record({
        who: request.principal?.who ?? 'anonymous',
        what: `${request.method} ${pathOf(request.url)}`,
        account,
        result: reply.statusCode < 400 ? 'ok' : 'failed',
        status: reply.statusCode,
      });
    },
  };
}

/**
 * /internal/* answers only another replica: the peer secret as bearer token, checked before anything else and
 * never replaced by an admin token or a trusted network (a pod sharing the network is not a replica). The caller
 * it forwards for is named in ON_BEHALF_OF_HEADER, believed because the peer authenticated it.
 */
function peerPrincipal(request: FastifyRequest, peer: PeerSecret | undefined): RequestPrincipal {
  if (!peer) {
    throw new ScaleAgentError(
      'UNAUTHENTICATED',
      `${pathOf(request.url)} is for plugin-server replicas and this one has no peer secret ` +
        '(http.peerAuth.secretFile): it answers no caller',
    );
  }
  if (!peer.verifies(bearerToken(request.headers.authorization))) {
    throw new ScaleAgentError(
      'UNAUTHENTICATED',
      `${pathOf(request.url)} is for plugin-server replicas: send the replicas' shared peer secret ` +
        '(http.peerAuth.secretFile) as Authorization: Bearer',
    );
  }
  const onBehalfOf = request.headers[ON_BEHALF_OF_HEADER];
  const who = (Array.isArray(onBehalfOf) ? onBehalfOf[0] : onBehalfOf)?.slice(0, 256) || 'unknown';
  return { who: `peer-for:${who}`, scope: 'peer' };
}
