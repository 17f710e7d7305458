/**
 * A Clouddriver Kubernetes account definition (`kubernetes.accounts[]` in clouddriver.yml or Halyard's config, an
 * account of `GET /credentials?expand=true`, the body of Clouddriver's `POST`/`PUT /credentials`) turned into the
 * dynamic account definition the plugin-server stores. One place for both the CLI (`accounts migrate`) and the
 * plugin-server (account management routes), so both read the same keys the same way.
 */
import type { DynamicAccountDefinition } from './config-types/dynamic-account.js';
import { ScaleAgentError } from './errors.js';
import { schemaProperties } from './yaml-config.js';

/** A dynamic account's definition (schemas/dynamic-account.schema.json), what a Clouddriver definition fills. */
export type AccountDefinition = DynamicAccountDefinition;

export interface ConvertedAccount {
  definition: AccountDefinition;
  /** Keys of the source this product has no use for (caching policies, docker registries, ...), to tell the user. */
  ignored: string[];
}

let keyTypes: Map<string, unknown> | undefined;

/** A definition key's JSON type as schemas/dynamic-account.schema.json (with the account options) declares it. */
function keyType(key: string): unknown {
  keyTypes ??= new Map([...schemaProperties('dynamic-account.schema.json')].map(([k, s]) => [k, s.type]));
  return keyTypes.get(key);
}

/**
 * What Clouddriver adds when it renders credentials (`/credentials?expand=true`) or Spinnaker's type tag: derived,
 * not configured, so leaving them out is not worth a warning.
 */
const DERIVED = new Set([
  'type',
  '@type',
  'cloudProvider',
  'environment',
  'accountType',
  'requiredGroupMembership',
  'challengeDestructiveActions',
  'primaryAccount',
  'spinnakerKindMap',
  'enabled',
  'credentials',
  'accountId',
  'providerVersion',
]);

/**
 * Reads one definition; `where` names it in errors (`clouddriver.yml:12 kubernetes.accounts[3]`). Unknown keys are
 * returned as `ignored`, wrong types throw INVALID_INPUT naming the key.
 */
export function fromClouddriverAccount(raw: unknown, where: string): ConvertedAccount {
  const bad = (key: string, message: string): never => {
    throw new ScaleAgentError('INVALID_INPUT', `${where}${key ? `.${key}` : ''}: ${message}`, {
      details: [{ path: key ? `/${key}` : '/', message: `${key || 'account'}: ${message}` }],
    });
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return bad('', 'must be an object');
  const src = raw as Record<string, unknown>;
  if (typeof src.name !== 'string' || src.name === '') return bad('name', 'must be a non-empty string');
  const definition: AccountDefinition = { name: src.name };
  const ignored: string[] = [];
  for (const [key, value] of Object.entries(src)) {
    if (key === 'name' || value === null || value === undefined) continue;
    // Shapes only; the definition's schema checks the values where the definition is used.
    const type = keyType(key);
    const into = definition as unknown as Record<string, unknown>;
    if (key === 'permissions') {
      definition.permissions = permissionsOf(value, (m) => bad('permissions', m));
    } else if (key === 'state') {
      if (value !== 'ACTIVE' && value !== 'INACTIVE') bad(key, 'must be ACTIVE or INACTIVE');
      definition.state = value as 'ACTIVE' | 'INACTIVE';
    } else if (type === 'string') {
      if (typeof value !== 'string') bad(key, 'must be a string');
      if (value !== '') into[key] = value;
    } else if (type === 'array') {
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) bad(key, 'must be a list of strings');
      into[key] = value;
    } else if (type === 'boolean') {
      if (typeof value !== 'boolean') bad(key, 'must be true or false');
      into[key] = value;
    } else if (!DERIVED.has(key)) {
      ignored.push(key);
    }
  }
  return { definition, ignored: ignored.sort() };
}

/**
 * Fiat's authorization → roles map; READ and WRITE are what accounts use here (EXECUTE and CREATE are
 * application permissions). Roles are kept as given: the plugin-server trims and lower-cases them as Fiat does.
 */
function permissionsOf(value: unknown, bad: (message: string) => never): { READ?: string[]; WRITE?: string[] } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return bad('must be a map of roles');
  const out: { READ?: string[]; WRITE?: string[] } = {};
  for (const [auth, roles] of Object.entries(value)) {
    if (!Array.isArray(roles) || roles.some((r) => typeof r !== 'string')) {
      bad(`${auth} must be a list of role names`);
    }
    const key = auth.toUpperCase();
    if (key === 'READ' || key === 'WRITE') out[key] = roles as string[];
  }
  return out;
}

/** A name pattern as the CLI's --pattern and the server's accounts.management.pattern mean it: the whole name. */
export function namePattern(source: string): RegExp {
  return new RegExp(`^(?:${source})$`);
}
