import { ScaleAgentError } from '../shared/errors.js';
import { isSecretReference, SecretResolver, VaultEngine, type SecretEngine } from '../shared/secrets/index.js';
import { STORAGE_URL_SCHEMES, type PluginServerConfig } from './config.js';

/**
 * Engines known to kork that this process does not read: the plugin-server has no Kubernetes client of its own (a
 * Secret of its cluster is mounted as a file instead), and vault needs its settings.
 */
function unconfigured(config: PluginServerConfig): Record<string, string> {
  return {
    k8s:
      'the plugin-server reads no Kubernetes Secrets itself: mount the Secret and name the file (storage.urlFile), ' +
      'or use a vault reference',
    ...(config.secrets.vault?.enabled ? {} : { vault: 'vault references need secrets.vault (url, authMethod)' }),
  };
}

/**
 * The plugin-server's config with its secret references read (docs/secrets.md): `storage.url` (`encrypted:`, the URL)
 * or `storage.urlFile` (`encryptedFile:`, a file's contents) become the URL itself. Read once, before the server is
 * built, as a urlFile is: a rotated secret applies on restart. An error names the field and the reference, never
 * a value; the config given is not changed.
 */
export async function resolvePluginServerSecrets(
  config: PluginServerConfig,
  env: NodeJS.ProcessEnv = process.env,
): Promise<PluginServerConfig> {
  const storage = config.storage;
  if (storage.type === 'memory') return config;
  const field = isSecretReference(storage.url) ? 'url' : isSecretReference(storage.urlFile) ? 'urlFile' : undefined;
  if (!field) return config;
  const text = storage[field] as string;
  const vault = config.secrets.vault;
  const engines: SecretEngine[] = vault?.enabled ? [new VaultEngine(vault, env)] : [];
  const resolver = new SecretResolver(engines, unconfigured(config));
  let value: string;
  try {
    const secret = await resolver.open(text, () => undefined);
    secret.close();
    value = secret.value.toString('utf8').trim();
  } catch (e) {
    const kind = e instanceof ScaleAgentError ? e.kind : 'UNAVAILABLE';
    throw new ScaleAgentError(kind, `storage.${field}: ${(e as Error).message}`, { cause: e });
  }
  const schemes = STORAGE_URL_SCHEMES[storage.type];
  if (!schemes.some((scheme) => value.startsWith(scheme))) {
    // Never the value: it may be a password alone, or a URL with one.
    throw new ScaleAgentError('INVALID_INPUT', `storage.${field}: secret reference ${text} holds no ${schemes[0]} URL`);
  }
  const { url: _url, urlFile: _urlFile, ...rest } = storage;
  return { ...config, storage: { ...rest, url: value } };
}
