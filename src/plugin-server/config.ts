import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ScaleAgentError } from '../shared/errors.js';
import { isSecretReference, referenceProblem } from '../shared/secrets/index.js';
import type { PluginServerConfig as PluginServerConfigSchema } from '../shared/config-types/plugin-server-config.js';
import { mergeYaml, parseYamlText, readYamlFile, validateConfig, type LoadedYaml } from '../shared/yaml-config.js';

// Names for the parts of schemas/plugin-server-config.schema.json (after defaults) the code passes around.
type Spinnaker = PluginServerConfigSchema['spinnaker'];
type SqlStorageSchema = Extract<PluginServerConfigSchema['storage'], { type: 'mysql' | 'postgres' }>;
/** A shared SQL store (MySQL/MariaDB or PostgreSQL), with the pool size the loader fills in. */
export type SqlStorageConfig = SqlStorageSchema & { connectionLimit: number };
/** storage, with the pool size the loader fills in (a default inside oneOf, which the schema cannot apply). */
export type StorageConfig = { type: 'memory' } | SqlStorageConfig;

/** The URL scheme each SQL store's URL must have (a secret reference is checked against it once read). */
export const STORAGE_URL_SCHEMES: Readonly<Record<SqlStorageConfig['type'], readonly string[]>> = {
  mysql: ['mysql://'],
  postgres: ['postgres://', 'postgresql://'],
};
export type AuthorizationConfig = NonNullable<PluginServerConfigSchema['authorization']>;
export type IdentityRule = AuthorizationConfig['identities'][number];
/** spinnaker.upstream: the real Clouddriver this server fronts (front mode, docs/spinnaker.md). */
export type UpstreamConfig = NonNullable<Spinnaker['upstream']>;
/** spinnaker.artifacts: what standalone mode fetches itself (api/artifact-routes.ts). */
export type ArtifactsConfig = Spinnaker['artifacts'];
/** One http/file artifact account (spinnaker.artifacts.http[]). */
export type HttpArtifactAccountConfig = ArtifactsConfig['http'][number];
/** spinnaker.fiat: Spinnaker's Fiat, which decides which accounts a user may read (docs/spinnaker.md). */
export type FiatConfig = NonNullable<Spinnaker['fiat']>;

/**
 * schemas/plugin-server-config.schema.json after defaults. `spinnaker` is optional in the type so configs built in
 * code need not name it; the schema defaults it to {}.
 */
export type PluginServerConfig = Omit<PluginServerConfigSchema, 'storage' | 'spinnaker'> & {
  storage: StorageConfig;
  spinnaker?: { upstream?: UpstreamConfig; artifacts?: ArtifactsConfig; fiat?: FiatConfig };
};

/** Lists that config overlays merge by item name rather than replace (docs/config-overlays.md). */
export const PLUGIN_SERVER_CONFIG_MERGED_LISTS = ['/spinnaker/artifacts/http'];

/** Reads and validates the plugin-server's config: one file, or several merged in order (later over earlier). */
export function loadPluginServerConfig(files: string | readonly string[]): PluginServerConfig {
  const docs = (typeof files === 'string' ? [files] : files).map((f) => readYamlFile(f));
  return validatePluginServerConfig(mergeYaml(docs, PLUGIN_SERVER_CONFIG_MERGED_LISTS));
}

export function parsePluginServerConfig(text: string, file = '<inline>'): PluginServerConfig {
  return validatePluginServerConfig(parseYamlText(file, text));
}

function validatePluginServerConfig(doc: LoadedYaml): PluginServerConfig {
  const data = validateConfig<PluginServerConfigSchema>(doc, 'plugin-server-config', 'plugin-server configuration');
  if (data.storage.type !== 'memory') data.storage.connectionLimit ??= 8;
  const config = data as PluginServerConfig;
  const storage = config.storage;
  if (storage.type !== 'memory') {
    const sources = (['url', 'urlFile', 'env'] as const).filter((k) => storage[k]);
    if (sources.length !== 1) {
      throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
        details: [doc.detail('/storage', `${storage.type} storage needs exactly one of url, urlFile, env`)],
      });
    }
  }
  checkSecretReferences(doc, config);
  const tls = config.grpc.tls;
  // Relative paths are relative to the config file that gives them, like every other file reference in our configs.
  const relAt = (pointer: string, p: string): string => {
    const file = doc.fileOf(pointer);
    return isAbsolute(p) || file === '<inline>' ? p : resolve(dirname(file), p);
  };
  if (tls) {
    tls.certFile = relAt('/grpc/tls/certFile', tls.certFile);
    tls.keyFile = relAt('/grpc/tls/keyFile', tls.keyFile);
    if (tls.clientCaFile) tls.clientCaFile = relAt('/grpc/tls/clientCaFile', tls.clientCaFile);
    if (tls.requireClientCert && !tls.clientCaFile) {
      throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
        details: [doc.detail('/grpc/tls/requireClientCert', 'requireClientCert needs clientCaFile')],
      });
    }
  }
  if (tls?.crlFile) tls.crlFile = relAt('/grpc/tls/crlFile', tls.crlFile);
  if (config.http.auth) config.http.auth.tokensFile = relAt('/http/auth/tokensFile', config.http.auth.tokensFile);
  if (config.authorization?.agentTokensFile) {
    config.authorization.agentTokensFile = relAt(
      '/authorization/agentTokensFile',
      config.authorization.agentTokensFile,
    );
  }
  if (config.dynamicAccounts.encryptionKeyFile) {
    config.dynamicAccounts.encryptionKeyFile = relAt(
      '/dynamicAccounts/encryptionKeyFile',
      config.dynamicAccounts.encryptionKeyFile,
    );
  }
  if (config.dynamicAccounts.encryptionKeyFile && config.dynamicAccounts.encryptionKeyEnv) {
    throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
      details: [doc.detail('/dynamicAccounts', 'give one of encryptionKeyFile and encryptionKeyEnv, not both')],
    });
  }
  const pattern = config.accounts.management.pattern;
  if (pattern !== undefined) {
    try {
      new RegExp(pattern);
    } catch (e) {
      throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
        details: [doc.detail('/accounts/management/pattern', `not a regular expression: ${(e as Error).message}`)],
      });
    }
  }
  checkScan(doc, config);
  checkArtifacts(doc, config, relAt);
  // A secret reference is no path.
  if (config.storage.type !== 'memory' && config.storage.urlFile && !isSecretReference(config.storage.urlFile)) {
    config.storage.urlFile = relAt('/storage/urlFile', config.storage.urlFile);
  }
  const vault = config.secrets.vault;
  if (vault?.tokenFile) vault.tokenFile = relAt('/secrets/vault/tokenFile', vault.tokenFile);
  return config;
}

/**
 * The fields that may hold a secret reference (plugin-server/secrets.ts reads them), each in the form its field
 * takes, and Vault's settings: a malformed one is a config error at its line, like any other.
 */
function checkSecretReferences(doc: LoadedYaml, config: PluginServerConfig): void {
  const problems = [];
  if (config.storage.type !== 'memory') {
    const { url, urlFile } = config.storage;
    const problem = isSecretReference(url) && referenceProblem(url, false, 'storage.url');
    if (problem) problems.push(doc.detail('/storage/url', problem));
    const fileProblem = isSecretReference(urlFile) && referenceProblem(urlFile, true, 'storage.urlFile');
    if (fileProblem) problems.push(doc.detail('/storage/urlFile', fileProblem));
  }
  if (config.secrets.vault?.authMethod === 'KUBERNETES' && !config.secrets.vault.role) {
    problems.push(doc.detail('/secrets/vault', 'authMethod KUBERNETES needs role'));
  }
  if (problems.length > 0) {
    throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
      details: problems,
    });
  }
}

/** dynamicAccounts.scan: patterns that compile, and a Clouddriver to read when there are any. */
function checkScan(doc: LoadedYaml, config: PluginServerConfig): void {
  const scan = config.dynamicAccounts.scan;
  scan.namePatterns.forEach((pattern, i) => {
    try {
      new RegExp(pattern);
    } catch (e) {
      throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
        details: [
          doc.detail(`/dynamicAccounts/scan/namePatterns/${i}`, `not a regular expression: ${(e as Error).message}`),
        ],
      });
    }
  });
  if (scan.namePatterns.length > 0 && !scan.clouddriverUrl && !config.spinnaker?.upstream) {
    throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
      details: [
        doc.detail(
          '/dynamicAccounts/scan',
          'namePatterns needs a Clouddriver to read: set clouddriverUrl, or spinnaker.upstream (front mode)',
        ),
      ],
    });
  }
}

/** spinnaker.artifacts: names unique, one credential per account, files resolved, and none in front mode. */
function checkArtifacts(
  doc: LoadedYaml,
  config: PluginServerConfig,
  relAt: (pointer: string, p: string) => string,
): void {
  const artifacts = config.spinnaker?.artifacts;
  if (!artifacts) return;
  const invalid = (path: string, message: string) =>
    new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
      details: [doc.detail(path, message)],
    });
  if (config.spinnaker?.upstream && artifacts.http.length > 0) {
    // One place fetches artifacts: in front mode the upstream Clouddriver's artifact accounts, which Deck lists.
    throw invalid(
      '/spinnaker/artifacts/http',
      'http artifact accounts are for standalone mode; with spinnaker.upstream set, configure them in Clouddriver',
    );
  }
  const seen = new Set<string>();
  artifacts.http.forEach((account, i) => {
    // embedded-artifact is the account Clouddriver (and this server) serve embedded/base64 under.
    if (seen.has(account.name) || account.name === 'embedded-artifact') {
      throw invalid(`/spinnaker/artifacts/http/${i}/name`, `artifact account name "${account.name}" is taken`);
    }
    seen.add(account.name);
    if (account.usernamePasswordFile && account.tokenFile) {
      throw invalid(`/spinnaker/artifacts/http/${i}`, 'give one of usernamePasswordFile and tokenFile, not both');
    }
    const at = `/spinnaker/artifacts/http/${i}`;
    if (account.usernamePasswordFile) {
      account.usernamePasswordFile = relAt(`${at}/usernamePasswordFile`, account.usernamePasswordFile);
    }
    if (account.tokenFile) account.tokenFile = relAt(`${at}/tokenFile`, account.tokenFile);
  });
}

/** The SQL store's URL from wherever the config says it lives; read at startup so a rotated Secret applies on restart. */
export function resolveStorageUrl(storage: SqlStorageConfig): string {
  for (const field of ['url', 'urlFile'] as const) {
    // Read by resolvePluginServerSecrets (secrets.ts) before the server is built; never taken as a URL or a path.
    if (isSecretReference(storage[field])) {
      throw new ScaleAgentError('INTERNAL', `storage.${field} is a secret reference that was not resolved`);
    }
  }
  if (storage.url) return storage.url;
  if (storage.urlFile) {
    try {
      return readFileSync(storage.urlFile, 'utf8').trim();
    } catch (e) {
      throw new ScaleAgentError('FILE_UNREADABLE', `cannot read storage.urlFile ${storage.urlFile}`, { cause: e });
    }
  }
  const name = storage.env ?? '';
  const v = process.env[name];
  if (!v) throw new ScaleAgentError('INVALID_INPUT', `storage.env: environment variable ${name} is not set`);
  return v;
}
