import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ScaleAgentError } from '../shared/errors.js';
import {
  detailAt,
  packagedSchemaValidator,
  parseYamlFile,
  parseYamlText,
  schemaErrorDetails,
  type LocatedDocument,
} from '../shared/yaml-config.js';

export type StorageConfig =
  { type: 'memory' } | { type: 'mysql'; url?: string; urlFile?: string; env?: string; connectionLimit: number };

export interface IdentityRule {
  match: { uri?: string; dns?: string; subject?: string; token?: string };
  accounts: string[];
  zones: string[];
}

/** spinnaker.upstream: the real Clouddriver this server fronts (front mode, docs/spinnaker.md). */
export interface UpstreamConfig {
  baseUrl: string;
  timeoutMs: number;
  connectTimeoutMs: number;
  mergeTimeoutMs: number;
  accountsRefreshSeconds: number;
}

/** One http/file artifact account (spinnaker.artifacts.http[]). */
export interface HttpArtifactAccountConfig {
  name: string;
  allowedHosts: string[];
  usernamePasswordFile?: string;
  tokenFile?: string;
}

/** spinnaker.artifacts: what standalone mode fetches itself (api/artifact-routes.ts). */
export interface ArtifactsConfig {
  http: HttpArtifactAccountConfig[];
  timeoutMs: number;
  maxBytes: number;
}

/** spinnaker.fiat: Spinnaker's Fiat, which decides which accounts a user may read (docs/spinnaker.md). */
export interface FiatConfig {
  baseUrl: string;
  cacheSeconds: number;
  missRefreshSeconds: number;
  timeoutMs: number;
}

export interface AuthorizationConfig {
  agentTokensFile?: string;
  identities: IdentityRule[];
}

/** schemas/plugin-server-config.schema.json, after defaults. */
export interface PluginServerConfig {
  grpc: {
    host: string;
    port: number;
    tls?: { certFile: string; keyFile: string; clientCaFile?: string; requireClientCert: boolean; crlFile?: string };
  };
  http: {
    host: string;
    port: number;
    advertiseUrl?: string;
    peerAuth?: { secretFile: string };
    auth?: { tokensFile: string; trustedNetworks: string[] };
  };
  storage: StorageConfig;
  accounts: {
    gracePeriodSeconds: number;
    leaseSeconds: number;
    cacheKinds: string[];
    cacheOmitKinds: string[];
    management: { pattern?: string };
  };
  operations: {
    agentWaitSeconds: number;
    cacheWaitSeconds: number;
    timeoutSeconds: number;
    liveReadTimeoutSeconds: number;
    historyDays: number;
    historyMaxTasks: number;
  };
  authorization?: AuthorizationConfig;
  dynamicAccounts: { encryptionKeyFile?: string; encryptionKeyEnv?: string };
  /** Optional in the type so configs built in code need not name it; the schema defaults it to {}. */
  spinnaker?: { upstream?: UpstreamConfig; artifacts?: ArtifactsConfig; fiat?: FiatConfig };
  limits: {
    maxMessageBytes: number;
    maxUnackedBytes: number;
    maxAccountsPerAgent: number;
    maxChangesPerBatch: number;
    heartbeatIntervalSeconds: number;
    sessionIdleTimeoutSeconds: number;
    /** Omitted: chosen from the CPUs at start (server.ts). */
    checkThreads?: number;
  };
  logLevel: string;
}

const schemaValidator = packagedSchemaValidator<PluginServerConfig>('plugin-server-config.schema.json');

export function loadPluginServerConfig(file: string): PluginServerConfig {
  return validatePluginServerConfig(parseYamlFile(file));
}

export function parsePluginServerConfig(text: string, file = '<inline>'): PluginServerConfig {
  return validatePluginServerConfig(parseYamlText(file, text));
}

function validatePluginServerConfig(doc: LocatedDocument): PluginServerConfig {
  const validate = schemaValidator();
  const data = structuredClone(doc.data);
  if (!validate(data)) {
    throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
      details: schemaErrorDetails(doc, validate.errors ?? []),
    });
  }
  const config = data;
  if (config.storage.type === 'mysql') {
    config.storage.connectionLimit ??= 8;
    const sources = (['url', 'urlFile', 'env'] as const).filter(
      (k) => config.storage.type === 'mysql' && config.storage[k],
    );
    if (sources.length !== 1) {
      throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
        details: [detailAt(doc, '/storage', 'mysql storage needs exactly one of url, urlFile, env')],
      });
    }
  }
  const tls = config.grpc.tls;
  if (tls) {
    // Relative paths are relative to the config file, like every other file reference in our configs.
    const base = dirname(doc.file);
    const abs = (p: string) => (isAbsolute(p) || doc.file === '<inline>' ? p : resolve(base, p));
    tls.certFile = abs(tls.certFile);
    tls.keyFile = abs(tls.keyFile);
    if (tls.clientCaFile) tls.clientCaFile = abs(tls.clientCaFile);
    if (tls.requireClientCert && !tls.clientCaFile) {
      throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
        details: [detailAt(doc, '/grpc/tls/requireClientCert', 'requireClientCert needs clientCaFile')],
      });
    }
  }
  const rel = (p: string) => (isAbsolute(p) || doc.file === '<inline>' ? p : resolve(dirname(doc.file), p));
  if (tls?.crlFile) tls.crlFile = rel(tls.crlFile);
  if (config.http.auth) config.http.auth.tokensFile = rel(config.http.auth.tokensFile);
  if (config.http.peerAuth) config.http.peerAuth.secretFile = rel(config.http.peerAuth.secretFile);
  if (config.authorization?.agentTokensFile) {
    config.authorization.agentTokensFile = rel(config.authorization.agentTokensFile);
  }
  if (config.dynamicAccounts.encryptionKeyFile) {
    config.dynamicAccounts.encryptionKeyFile = rel(config.dynamicAccounts.encryptionKeyFile);
  }
  if (config.dynamicAccounts.encryptionKeyFile && config.dynamicAccounts.encryptionKeyEnv) {
    throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
      details: [detailAt(doc, '/dynamicAccounts', 'give one of encryptionKeyFile and encryptionKeyEnv, not both')],
    });
  }
  const pattern = config.accounts.management.pattern;
  if (pattern !== undefined) {
    try {
      new RegExp(pattern);
    } catch (e) {
      throw new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
        details: [detailAt(doc, '/accounts/management/pattern', `not a regular expression: ${(e as Error).message}`)],
      });
    }
  }
  checkArtifacts(doc, config, rel);
  if (config.storage.type === 'mysql' && config.storage.urlFile && !isAbsolute(config.storage.urlFile)) {
    config.storage.urlFile = resolve(dirname(doc.file), config.storage.urlFile);
  }
  return config;
}

/** spinnaker.artifacts: names unique, one credential per account, files resolved, and none in front mode. */
function checkArtifacts(doc: LocatedDocument, config: PluginServerConfig, rel: (p: string) => string): void {
  const artifacts = config.spinnaker?.artifacts;
  if (!artifacts) return;
  const invalid = (path: string, message: string) =>
    new ScaleAgentError('INVALID_INPUT', `${doc.file}: invalid plugin-server configuration`, {
      details: [detailAt(doc, path, message)],
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
    if (account.usernamePasswordFile) account.usernamePasswordFile = rel(account.usernamePasswordFile);
    if (account.tokenFile) account.tokenFile = rel(account.tokenFile);
  });
}

/** The MySQL URL from wherever the config says it lives; read at startup so a rotated Secret applies on restart. */
export function resolveMysqlUrl(storage: Extract<StorageConfig, { type: 'mysql' }>): string {
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
