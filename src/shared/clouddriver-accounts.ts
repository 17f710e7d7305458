/**
 * A Clouddriver Kubernetes account definition (`kubernetes.accounts[]` in clouddriver.yml or Halyard's config, an
 * account of `GET /credentials?expand=true`, the body of Clouddriver's `POST`/`PUT /credentials`) turned into the
 * dynamic account definition the plugin-server stores, and a running Clouddriver's accounts read. One place for the
 * CLI (`accounts migrate`) and the plugin-server (account management routes, the automatic migration's scan), so
 * all read the same keys the same way.
 */
import type { DynamicAccountDefinition } from './config-types/dynamic-account.js';
import { ScaleAgentError } from './errors.js';
import { schemaProperties } from './yaml-config.js';

/** A dynamic account's definition (schemas/dynamic-account.schema.json), what a Clouddriver definition fills. */
export type AccountDefinition = DynamicAccountDefinition;

/** One account as a source (a Clouddriver, a Clouddriver or Halyard YAML file) has it, before conversion. */
export interface SourceAccount {
  /** The account as the source has it. */
  raw: unknown;
  /** Where it is, for messages: `clouddriver.yml:14 kubernetes.accounts[2]` or `http://.../credentials #2`. */
  where: string;
  /** Clouddriver's cloud provider of the account; only `kubernetes` is migrated. */
  type: string;
  /** The /credentials rendering: namespaces there may be the cluster's list rather than the configured one. */
  rendered: boolean;
}

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

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The accounts of a `GET /credentials?expand=true` answer (`where` names the request in messages). */
export function accountsFromCredentials(body: unknown, where: string): SourceAccount[] {
  if (!Array.isArray(body)) throw new ScaleAgentError('INVALID_INPUT', `GET ${where}: expected a list of accounts`);
  return body.map((raw, i) => {
    const o = isObject(raw) ? raw : {};
    const type = typeof o.cloudProvider === 'string' ? o.cloudProvider : typeof o.type === 'string' ? o.type : '';
    return { raw, where: `${where} [${i}]`, type, rendered: true };
  });
}

/** Accounts a running Clouddriver (or anything answering its `/credentials?expand=true`) renders. */
export async function accountsFromClouddriver(url: string, timeoutMs = 30_000): Promise<SourceAccount[]> {
  const target = new URL(url);
  if (!/\/credentials\/?$/.test(target.pathname))
    target.pathname = `${target.pathname.replace(/\/+$/, '')}/credentials`;
  target.searchParams.set('expand', 'true');
  let res: Response;
  try {
    res = await fetch(target, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    throw new ScaleAgentError('UNAVAILABLE', `cannot reach Clouddriver at ${target.href}: ${(e as Error).message}`, {
      cause: e,
    });
  }
  const text = await res.text();
  if (!res.ok) {
    throw new ScaleAgentError('UNAVAILABLE', `GET ${target.href}: ${res.status} ${text.slice(0, 200)}`);
  }
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new ScaleAgentError('INVALID_INPUT', `GET ${target.href}: not JSON (is it Clouddriver's /credentials?)`);
  }
  return accountsFromCredentials(body, target.href);
}
