import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { fromClouddriverAccount, namePattern, type AccountDefinition } from '../../shared/clouddriver-accounts.js';
import { ScaleAgentError } from '../../shared/errors.js';
import { schemaDefaults, schemaValidator } from '../../shared/yaml-config.js';
import type { DynamicAccountInput, DynamicAccounts } from '../accounts/dynamic.js';

/** Hands a request this server does not handle to someone who does (front mode: the upstream Clouddriver). */
export type ForwardRequest = (request: FastifyRequest, reply: FastifyReply) => unknown;

export interface AccountManagementOptions {
  dynamic: DynamicAccounts;
  /** `accounts.management.pattern`, matched against the whole name (namePattern); unset: no name matches. */
  pattern?: string | undefined;
  forward?: ForwardRequest | undefined;
}

const validDefinition = schemaValidator<DynamicAccountInput>('dynamic-account');

/**
 * What PUT's replace semantics give every key a definition may leave out: its schema default, no context and no
 * permissions. The kubeconfig source (serviceAccount among them) is the exception: it stays when none is given.
 */
const { serviceAccount: _source, ...DEFAULTS } = schemaDefaults('dynamic-account.schema.json');
const REPLACED: Omit<DynamicAccountInput, 'name'> = { ...DEFAULTS, context: '', permissions: {} };

const who = (request: FastifyRequest): string => request.principal?.who ?? 'anonymous';

/**
 * Clouddriver's account management writes (Spinnaker 1.28+, clouddriver-web's CredentialsController): `POST` and
 * `PUT /credentials` with an account definition (`{"type": "kubernetes", "name": ..., "kubeconfigFile": ...}`),
 * `DELETE /credentials/{name}`. A Kubernetes definition whose name matches `pattern` becomes a dynamic account
 * (placed on an agent at once, as Clouddriver starts using an account it stores); anything else belongs to another
 * Clouddriver and goes to `forward`, or is refused with 400 saying how to configure that.
 */
export const accountManagementRoutes: FastifyPluginAsync<AccountManagementOptions> = async (app, opts) => {
  const pattern = opts.pattern === undefined ? undefined : namePattern(opts.pattern);
  const ours = (name: unknown): name is string => typeof name === 'string' && pattern?.test(name) === true;
  const isOursDefinition = (body: unknown): body is Record<string, unknown> & { name: string } => {
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return false;
    const b = body as Record<string, unknown>;
    return (b.type ?? b['@type']) === 'kubernetes' && ours(b.name);
  };
  const elsewhere = (request: FastifyRequest, reply: FastifyReply): unknown => {
    if (opts.forward) return opts.forward(request, reply);
    const which = opts.pattern ? `matches accounts.management.pattern (${opts.pattern})` : 'matches a pattern';
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `this server handles only Kubernetes account definitions (type "kubernetes") whose name ${which}` +
        (opts.pattern ? '' : ', and accounts.management.pattern is not set') +
        '; to pass other accounts to Clouddriver, run the plugin-server in front mode with spinnaker.upstream.baseUrl',
    );
  };

  const definitionOf = (body: Record<string, unknown>): DynamicAccountInput => {
    const { definition } = fromClouddriverAccount(body, 'account definition');
    // Clouddriver uses an account as soon as it stores it: the same here, unless the definition says otherwise.
    const input = { ...definition, state: definition.state ?? 'ACTIVE' };
    if (!validDefinition(input)) {
      const err = validDefinition.errors?.[0];
      const field = err?.instancePath.slice(1) || 'account';
      throw new ScaleAgentError('INVALID_INPUT', `account definition ${field}: ${err?.message ?? 'is invalid'}`, {
        details: [{ path: err?.instancePath || '/', message: `${field}: ${err?.message ?? 'is invalid'}` }],
      });
    }
    return input;
  };

  app.post('/credentials', async (request, reply) => {
    if (!isOursDefinition(request.body)) return elsewhere(request, reply);
    const input = definitionOf(request.body);
    if (opts.dynamic.has(input.name) || opts.dynamic.isStatic(input.name)) {
      throw new ScaleAgentError('CONFLICT', `account ${input.name} already exists; PUT /credentials updates it`);
    }
    await opts.dynamic.create(input, who(request));
    return reply.code(200).send(rendered(input));
  });

  app.put('/credentials', async (request, reply) => {
    if (!isOursDefinition(request.body)) return elsewhere(request, reply);
    // Clouddriver's PUT replaces the definition: what it leaves out goes back to its default (the kubeconfig source
    // excepted, which stays when none is given, as the contents are never shown to send back).
    const input: DynamicAccountInput = { ...REPLACED, ...definitionOf(request.body) };
    if (opts.dynamic.isStatic(input.name)) {
      throw new ScaleAgentError(
        'CONFLICT',
        `account ${input.name} is configured on its agent, not dynamic; change it in the agent's config`,
      );
    }
    await opts.dynamic.update(input, who(request));
    return reply.code(200).send(rendered(input));
  });

  app.delete<{ Params: { name: string } }>('/credentials/:name', async (request, reply) => {
    if (!ours(request.params.name)) return elsewhere(request, reply);
    await opts.dynamic.remove(request.params.name, who(request));
    return reply.code(200).send();
  });
};

/** Clouddriver answers with the definition it stored; the kubeconfig contents stay write-only here. */
function rendered(input: AccountDefinition): Record<string, unknown> {
  const { kubeconfigContents: _secret, ...rest } = input;
  return { type: 'kubernetes', ...rest };
}
