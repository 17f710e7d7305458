import type { FastifyPluginAsync, FastifyRequest, FastifySchemaCompiler } from 'fastify';
import { ScaleAgentError } from '../../shared/errors.js';
import { compileSchema, SCHEMA_BASE } from '../../shared/yaml-config.js';
import type { DynamicAccountInput, DynamicAccounts } from '../accounts/dynamic.js';
import { migrateAccounts } from '../accounts/migrate.js';

const NAME = '^[A-Za-z0-9]([A-Za-z0-9._-]{0,251}[A-Za-z0-9])?$';
const names = { type: 'array', maxItems: 10_000, items: { type: 'string', minLength: 1, maxLength: 253 } } as const;
/** schemas/dynamic-account.schema.json: a definition, which shares its account options with the agent config's. */
const definition = { $ref: `${SCHEMA_BASE}dynamic-account.schema.json` };
/**
 * Definitions are checked by the shared schemas' validator: the schema file is draft 2020-12 and refers to
 * account-options.schema.json, and a key a PUT leaves out keeps what is stored, so no defaults may be filled in
 * (fastify's own ajv is draft-07 with defaults on). Its errors read as fastify's (`body/2/name must match ...`).
 */
const definitionCompiler: FastifySchemaCompiler<unknown> = ({ schema }) => compileSchema(schema as object);

const stateChangeSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 1000,
  items: {
    type: 'object',
    required: ['name', 'state'],
    properties: { name: { type: 'string', pattern: NAME }, state: { enum: ['ACTIVE', 'INACTIVE'] } },
  },
} as const;

const who = (request: FastifyRequest): string => request.principal?.who ?? 'anonymous';

function requireObjectBody(body: unknown): void {
  // PUT takes one account; an array is the bulk form of other endpoints (400, as in the reference).
  if (Array.isArray(body)) throw new ScaleAgentError('INVALID_INPUT', 'body must be one account object, not an array');
}

/**
 * The Armory-style dynamic accounts API (armory-scale-agent.md §3). Bodies are validated by JSON Schema before
 * anything changes; kubeconfigContents is write-only (never in a response or a log line).
 */
export interface DynamicRouteDeps {
  dynamic: DynamicAccounts;
  /** Front mode: why a name may not be an agent account (the upstream Clouddriver has it), or undefined. */
  upstreamClash?: ((name: string) => string | undefined) | undefined;
}

export const dynamicAccountRoutes: FastifyPluginAsync<DynamicRouteDeps> = async (app, { dynamic, upstreamClash }) => {
  app.post<{ Body: DynamicAccountInput }>(
    '/armory/accounts/dynamic',
    { schema: { body: definition }, validatorCompiler: definitionCompiler },
    async (request, reply) => {
      requireObjectBody(request.body);
      // Refused now rather than at the agent's registration, so the operator hears it from the request they made.
      const clash = upstreamClash?.(request.body.name);
      if (clash) throw new ScaleAgentError('CONFLICT', clash);
      const view = await dynamic.create(request.body, who(request));
      return reply.code(201).send(view);
    },
  );
  app.put<{ Body: DynamicAccountInput }>(
    '/armory/accounts/dynamic',
    { schema: { body: definition }, validatorCompiler: definitionCompiler },
    async (request, reply) => {
      requireObjectBody(request.body);
      return reply.code(202).send(await dynamic.update(request.body, who(request)));
    },
  );
  // Armory's bulk migrate: an array of definitions (AddAgentAccountRequest and any other definition key), new ones
  // INACTIVE unless `state` says otherwise; `?dryRun=true` answers what would happen and changes nothing.
  app.post<{ Body: DynamicAccountInput[]; Querystring: { dryRun?: 'true' | 'false' } }>(
    '/armory/accounts',
    {
      schema: {
        body: { type: 'array', minItems: 1, maxItems: 1000, items: definition },
        // Spelled out: this validator turns no string into a boolean, and anything else must stay a 400.
        querystring: { type: 'object', properties: { dryRun: { enum: ['true', 'false'] } } },
      },
      validatorCompiler: definitionCompiler,
    },
    async (request, reply) => {
      const report = await migrateAccounts(dynamic, request.body, who(request), {
        dryRun: request.query.dryRun === 'true',
      });
      const changed = !report.dryRun && report.results.some((r) => r.outcome !== 'unchanged');
      return reply.code(changed ? 202 : 200).send(report);
    },
  );
  app.patch<{ Body: { name: string; state: 'ACTIVE' | 'INACTIVE' }[] }>(
    '/armory/accounts',
    { schema: { body: stateChangeSchema } },
    async (request, reply) => {
      for (const c of request.body) {
        if (!(await dynamic.lookup(c.name)))
          throw new ScaleAgentError('NOT_FOUND', `dynamic account ${c.name} does not exist`);
      }
      const out = [];
      for (const c of request.body) out.push(await dynamic.setState(c.name, c.state, who(request)));
      return reply.code(202).send(out);
    },
  );
  app.delete<{ Params: { name: string } }>('/armory/accounts/:name', async (request, reply) => {
    await dynamic.remove(request.params.name, who(request));
    return reply.code(202).send([]);
  });
  app.delete<{ Body: string[] }>(
    '/armory/accounts',
    { schema: { body: { ...names, minItems: 1 } } },
    async (request, reply) => {
      for (const n of request.body) {
        if (!(await dynamic.lookup(n))) throw new ScaleAgentError('NOT_FOUND', `dynamic account ${n} does not exist`);
      }
      for (const n of request.body) await dynamic.remove(n, who(request));
      return reply.code(202).send([]);
    },
  );
};
