import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteHandlerMethod } from 'fastify';
import type { Counter } from 'prom-client';
import { httpStatusOf, ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import { isAdminPath } from '../auth/admin-auth.js';
import type { UpstreamAccounts } from './accounts.js';
import { UpstreamUnreachable, type UpstreamClient } from './client.js';
import { mergeSides, MERGED_ROUTES, shapeFits, type Side } from './merge.js';

/** Set on merged answers that carry this server's part only. */
export const UPSTREAM_HEADER = 'x-scale-agent-upstream';

/** Operation submissions, routed by the accounts in their body. */
const OPS_ROUTES = new Set(['/kubernetes/ops', '/kubernetes/ops/:opName', '/ops', '/ops/:opName']);
/** On-demand cache refreshes name their account in the body (`account` or `credentials`). */
const CACHE_ROUTE = '/cache/kubernetes/:type';
/**
 * Every route naming a task (Orca's polling, resume, forced retry and restart, and the owner lookup), routed by who
 * holds the task: this server's tasks are answered here, any other goes to the upstream Clouddriver.
 */
const TASK_ROUTES = new Set([
  '/task/:id',
  '/task/:ref',
  '/kubernetes/task/:id',
  '/kubernetes/task/:id/restart',
  '/kubernetes/task/:id/owner',
]);
/** `POST /task/{id}:resume` is one path segment (api/orca-routes.ts); the action is not part of the task id. */
const RESUME = ':resume';

export interface FrontModeDeps {
  client: UpstreamClient;
  upstreamAccounts: UpstreamAccounts;
  /** An account an agent serves here: registered, or a dynamic account defined here. */
  isAgentAccount(name: string): boolean;
  taskExists(id: string): Promise<boolean>;
  errors: Counter<'reason' | 'use'>;
  mergeTimeoutMs: number;
  bodyLimit: number;
  log: Logger;
}

const rawBodies = new WeakMap<FastifyRequest, Buffer>();

/**
 * Requests a local route may pass on (forward()): Clouddriver's account management writes, and artifact fetches of
 * types only Clouddriver can fetch. Their bodies are kept as sent.
 */
function mayForward(request: FastifyRequest): boolean {
  const route = request.routeOptions.url;
  if (route === '/artifacts/fetch') return request.method === 'PUT';
  return route === '/credentials' && (request.method === 'POST' || request.method === 'PUT');
}

function pathOf(url: string): string {
  return (url.split('?')[0] ?? '/').replace(/\/{2,}/g, '/');
}

/** The task a task route names: `id`, or `ref` without its `:resume`. */
function taskOf(params: Record<string, string | undefined>): string | undefined {
  if (params.id !== undefined) return params.id;
  return params.ref?.endsWith(RESUME) ? params.ref.slice(0, -RESUME.length) : params.ref;
}

function failureReason(e: unknown): string {
  return e instanceof UpstreamUnreachable ? e.failure : 'error';
}

/** `account` (or its alias `credentials`) of every operation in an Orca operations body, one or many. */
export function operationAccounts(body: unknown, single: boolean): string[] {
  const descriptions: unknown[] = single
    ? [body]
    : Array.isArray(body)
      ? body.flatMap((entry) => (entry && typeof entry === 'object' ? Object.values(entry) : []))
      : [];
  const out: string[] = [];
  for (const d of descriptions) {
    if (!d || typeof d !== 'object') continue;
    const { account, credentials } = d as { account?: unknown; credentials?: unknown };
    const name = typeof account === 'string' && account ? account : credentials;
    if (typeof name === 'string' && name) out.push(name);
  }
  return out;
}

/**
 * Front mode (`spinnaker.upstream`): this server stands in front of the real Clouddriver, so Spinnaker's services
 * need one Clouddriver URL. What it owns it answers (admin and health routes, everything about agent accounts);
 * every other request goes to the upstream unchanged, streamed both ways; list endpoints answer both sides merged
 * (merge.ts). Routing reads the route that matched, so it classifies requests exactly as the handlers would.
 */
export class FrontMode {
  constructor(private readonly deps: FrontModeDeps) {}

  /**
   * Before routes are registered: the handlers of merged routes gain the upstream's part. Both sides are asked at
   * once; the upstream's part is waited for at most mergeTimeoutMs, else left out and the answer says so.
   */
  wrapRoutes(app: FastifyInstance): void {
    const merged = this.merged.bind(this);
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (!methods.includes('GET') || !MERGED_ROUTES.has(route.url)) return;
      const handler = route.handler as (this: FastifyInstance, ...args: unknown[]) => Promise<unknown>;
      const pattern = route.url;
      route.handler = async function (this: FastifyInstance, request: FastifyRequest, reply: FastifyReply) {
        return merged(pattern, request, reply, () => handler.call(this, request, reply));
      } as RouteHandlerMethod;
    });
  }

  /**
   * In the root, after authentication (hooks run in the order they were added): requests no route matched are the
   * upstream's, but for admin paths (a 404 here).
   */
  routeUnmatched(app: FastifyInstance): void {
    app.addHook('onRequest', async (request, reply) => {
      if (request.routeOptions.url !== undefined || isAdminPath(pathOf(request.url))) return;
      return this.proxy(request, reply);
    });
  }

  /**
   * In the context of the Clouddriver surface's routes, after its authentication: requests not about agent accounts
   * are proxied. Health, admin and peer routes live in other contexts (api/http.ts), so they never are.
   */
  installRouting(app: FastifyInstance): void {
    app.addHook('onRequest', async (request, reply) => {
      const route = request.routeOptions.url;
      if (route === undefined || (MERGED_ROUTES.has(route) && request.method === 'GET')) return;
      if (OPS_ROUTES.has(route) || (route === CACHE_ROUTE && request.method === 'POST')) return; // decided on the body
      const params = (request.params ?? {}) as Record<string, string | undefined>;
      const task = TASK_ROUTES.has(route) ? taskOf(params) : undefined;
      if (task !== undefined) {
        if (await this.deps.taskExists(task)) return;
        return this.proxy(request, reply);
      }
      if (params.account !== undefined && !this.deps.isAgentAccount(params.account)) return this.proxy(request, reply);
    });

    // Operations are routed by their accounts, known once the body is parsed; the bytes are kept to pass on as sent.
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (!this.bodyRouted(request) && !mayForward(request)) return payload;
      const chunks: Buffer[] = [];
      let size = 0;
      for await (const chunk of payload) {
        const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string);
        size += b.length;
        if (size > this.deps.bodyLimit) {
          throw new ScaleAgentError('INPUT_TOO_LARGE', `request body is larger than ${this.deps.bodyLimit} bytes`);
        }
        chunks.push(b);
      }
      const raw = Buffer.concat(chunks);
      rawBodies.set(request, raw);
      return Readable.from([raw]);
    });
    app.addHook('preHandler', async (request, reply) => {
      if (!this.bodyRouted(request)) return;
      const route = request.routeOptions.url!;
      const accounts =
        route === CACHE_ROUTE
          ? operationAccounts(request.body, true)
          : operationAccounts(request.body, route.endsWith('/:opName'));
      const agent = [...new Set(accounts.filter((a) => this.deps.isAgentAccount(a)))];
      const classic = [...new Set(accounts.filter((a) => !this.deps.isAgentAccount(a)))];
      if (classic.length === 0) return; // all agent accounts (or none named: local validation answers)
      if (agent.length > 0) {
        throw new ScaleAgentError(
          'INVALID_INPUT',
          `one request cannot mix agent accounts (${agent.join(', ')}) with accounts of the upstream Clouddriver (${classic.join(', ')}): post them separately`,
          { details: [{ path: 'account', message: 'agent and upstream accounts in one request' }] },
        );
      }
      return this.proxy(request, reply, rawBodies.get(request));
    });
  }

  /**
   * A request a local route chose not to handle, passed on as it came: Clouddriver's account management for
   * accounts that do not match `accounts.management.pattern` (api/account-management.ts), artifacts that are not
   * fetched here (api/artifact-routes.ts).
   */
  forward(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    return this.proxy(request, reply, rawBodies.get(request));
  }

  private bodyRouted(request: FastifyRequest): boolean {
    const route = request.routeOptions.url;
    return route !== undefined && (OPS_ROUTES.has(route) || (route === CACHE_ROUTE && request.method === 'POST'));
  }

  /** The request, as it came, to the upstream; its answer, as it came, to the caller. 502/504 when there is none. */
  private async proxy(request: FastifyRequest, reply: FastifyReply, body?: Buffer): Promise<FastifyReply> {
    const streamed =
      body === undefined &&
      (request.headers['transfer-encoding'] !== undefined ||
        (request.headers['content-length'] !== undefined && request.headers['content-length'] !== '0'));
    const forwardedFor = [request.headers['x-forwarded-for'], request.ip].filter(Boolean).join(', ');
    // A caller that hangs up before the upstream answers releases the upstream request too.
    const callerGone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) callerGone.abort();
    };
    reply.raw.once('close', onClose);
    try {
      const res = await this.deps.client.request({
        method: request.method,
        pathAndQuery: request.url,
        headers: {
          ...request.headers,
          'x-forwarded-for': forwardedFor,
          'x-forwarded-host': request.headers['x-forwarded-host'] ?? request.headers.host,
          'x-forwarded-proto': request.headers['x-forwarded-proto'] ?? request.protocol,
        },
        body: body ?? (streamed ? request.raw : undefined),
        signal: callerGone.signal,
      });
      return reply.code(res.status).headers(res.headers).send(res.body);
    } catch (e) {
      if (!callerGone.signal.aborted) this.deps.errors.inc({ reason: failureReason(e), use: 'proxy' });
      if (e instanceof UpstreamUnreachable) throw e.toScaleAgentError(this.deps.client.baseUrl);
      throw e;
    }
  }

  /** One merged list: this server's handler and the upstream, asked at once. */
  async merged(route: string, request: FastifyRequest, reply: FastifyReply, local: () => Promise<unknown>) {
    const upstreamPart = this.upstreamPart(route, request);
    let localSide: Side;
    try {
      localSide = { ok: true, body: await local() };
    } catch (e) {
      localSide = { ok: false, status: httpStatusOf(e), error: e };
    }
    const upstreamSide = await upstreamPart;
    if (!upstreamSide.ok && upstreamSide.status !== 404) void reply.header(UPSTREAM_HEADER, 'unavailable');
    const out = mergeSides(route, localSide, upstreamSide);
    if (!out.ok) throw out.error;
    return out.body;
  }

  private async upstreamPart(route: string, request: FastifyRequest): Promise<Side> {
    const timeoutMs = this.deps.mergeTimeoutMs;
    try {
      const res = await this.deps.client.getJson(request.url, request.headers, timeoutMs);
      if (res.status === 404) return { ok: false, status: 404 };
      if (res.status >= 200 && res.status < 300 && shapeFits(route, res.body)) return { ok: true, body: res.body };
      this.deps.errors.inc({ reason: 'status', use: 'merge' });
      this.deps.log.warn({ route, status: res.status }, 'upstream Clouddriver answered a merged list with an error');
      return { ok: false, status: 502 };
    } catch (e) {
      this.deps.errors.inc({ reason: failureReason(e), use: 'merge' });
      this.deps.log.warn(
        { route, err: e, upstream: this.deps.client.baseUrl },
        'upstream Clouddriver did not answer a merged list; answering with the agent accounts only',
      );
      return { ok: false, status: 504 };
    }
  }
}
