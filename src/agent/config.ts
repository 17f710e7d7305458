import { hostname } from 'node:os';
import { dirname, isAbsolute, resolve } from 'node:path';
import { ScaleAgentError, type ErrorDetail } from '../shared/errors.js';
import type {
  AccountConfig as AccountSchema,
  AgentConfig as AgentConfigSchema,
} from '../shared/config-types/agent-config.js';
import { isSecretReference, referenceProblem } from '../shared/secrets/index.js';
import { mergeYaml, parseYamlText, readYamlFile, validateConfig, type LoadedYaml } from '../shared/yaml-config.js';

/** One account (schemas/agent-config.schema.json, after defaults), or a dynamic account the plugin-server sent. */
export type AccountConfig = AccountSchema & {
  /** The kubeconfig itself, kept in memory: dynamic accounts only (the plugin-server sends it over the stream). */
  kubeconfigContents?: string;
};

/** schemas/agent-config.schema.json after defaults, with agentId settled. */
export type AgentConfig = AgentConfigSchema & { agentId: string };

/** Lists of the agent config that overlays merge by item name rather than replace (docs/config-overlays.md). */
export const AGENT_CONFIG_MERGED_LISTS = ['/kubernetes/accounts'];

/**
 * Reads, merges (later files over earlier ones), validates and completes (defaults, agentId, absolute paths) an
 * agent's config files.
 */
export function loadAgentConfig(files: string | readonly string[], env: NodeJS.ProcessEnv = process.env): AgentConfig {
  const docs = (typeof files === 'string' ? [files] : files).map((f) => readYamlFile(f));
  return configFromDocument(mergeYaml(docs, AGENT_CONFIG_MERGED_LISTS), env);
}

/** Same as loadAgentConfig for text already in memory (`file` only names it in errors and anchors paths). */
export function parseAgentConfig(file: string, text: string, env: NodeJS.ProcessEnv = process.env): AgentConfig {
  return parseAgentConfigs([{ file, text }], env);
}

/** Same as loadAgentConfig for the texts of several files already in memory, in merge order. */
export function parseAgentConfigs(
  sources: readonly { file: string; text: string }[],
  env: NodeJS.ProcessEnv = process.env,
): AgentConfig {
  const docs = sources.map((s) => parseYamlText(s.file, s.text));
  return configFromDocument(mergeYaml(docs, AGENT_CONFIG_MERGED_LISTS), env);
}

function configFromDocument(doc: LoadedYaml, env: NodeJS.ProcessEnv): AgentConfig {
  const config = validateConfig<AgentConfigSchema>(doc, 'agent-config', 'agent config');
  const details = semanticProblems(doc, config);
  if (details.length > 0) {
    throw new ScaleAgentError('INVALID_INPUT', `${doc.file} has invalid settings`, { details });
  }
  const agentId = config.agentId ?? (env.POD_NAME || hostname());
  const settled: AgentConfig = { ...config, agentId };
  resolvePaths(settled, (pointer) => dirname(resolve(doc.fileOf(pointer))));
  return settled;
}

function semanticProblems(doc: LoadedYaml, config: AgentConfigSchema): ErrorDetail[] {
  const problems: ErrorDetail[] = [];
  const detailAt = (pointer: string, message: string) => doc.detail(pointer, message);
  if (config.server.insecure && config.server.tls) {
    problems.push(detailAt('/server/insecure', 'insecure: true contradicts the tls block; remove one of them'));
  }
  const seen = new Map<string, number>();
  config.kubernetes.accounts.forEach((a, i) => {
    const at = `/kubernetes/accounts/${i}`;
    const first = seen.get(a.name);
    if (first !== undefined) {
      problems.push(detailAt(`${at}/name`, `duplicate account name '${a.name}' (first at index ${first})`));
    } else {
      seen.set(a.name, i);
    }
    if (a.kubeconfigFile && a.serviceAccount) {
      problems.push(detailAt(`${at}/serviceAccount`, 'give either kubeconfigFile or serviceAccount: true, not both'));
    } else if (!a.kubeconfigFile && !a.serviceAccount) {
      problems.push(detailAt(at, 'needs kubeconfigFile or serviceAccount: true'));
    }
    if (isSecretReference(a.kubeconfigFile)) {
      const problem = referenceProblem(a.kubeconfigFile, true, 'a kubeconfig');
      if (problem) problems.push(detailAt(`${at}/kubeconfigFile`, problem));
    }
    if (a.context && !a.kubeconfigFile) {
      problems.push(detailAt(`${at}/context`, 'context only applies with kubeconfigFile'));
    }
    if (a.namespaces.length > 0 && a.omitNamespaces.length > 0) {
      problems.push(detailAt(`${at}/omitNamespaces`, 'namespaces and omitNamespaces are exclusive'));
    }
    if (a.kinds.length > 0 && a.omitKinds.length > 0) {
      problems.push(detailAt(`${at}/omitKinds`, 'kinds and omitKinds are exclusive'));
    }
  });
  if (isSecretReference(config.server.tokenFile)) {
    const problem = referenceProblem(config.server.tokenFile, true, 'a token file');
    if (problem) problems.push(detailAt('/server/tokenFile', problem));
  }
  const vault = config.secrets.vault;
  if (vault?.authMethod === 'KUBERNETES' && !vault.role) {
    problems.push(detailAt('/secrets/vault', 'authMethod KUBERNETES needs role'));
  }
  return problems;
}

/** What is wrong with a reference in a field that names a file (a kubeconfig, a token file), or undefined. */
/**
 * Relative paths are relative to the config file that gives them, as in a kubeconfig: a file then works wherever it
 * is mounted, and an overlay's paths need not know where the base file is.
 */
function resolvePaths(config: AgentConfig, baseOf: (pointer: string) => string): void {
  // A secret reference is no path.
  const abs = (pointer: string, p: string | undefined): string | undefined =>
    p === undefined || isAbsolute(p) || isSecretReference(p) ? p : resolve(baseOf(pointer), p);
  const tls = config.server.tls;
  if (tls) {
    if (tls.caFile) tls.caFile = abs('/server/tls/caFile', tls.caFile);
    if (tls.certFile) tls.certFile = abs('/server/tls/certFile', tls.certFile);
    if (tls.keyFile) tls.keyFile = abs('/server/tls/keyFile', tls.keyFile);
  }
  if (config.server.tokenFile) config.server.tokenFile = abs('/server/tokenFile', config.server.tokenFile);
  const k = config.secrets.kubernetes;
  if (k.kubeconfigFile) k.kubeconfigFile = abs('/secrets/kubernetes/kubeconfigFile', k.kubeconfigFile);
  const vault = config.secrets.vault;
  if (vault?.tokenFile) vault.tokenFile = abs('/secrets/vault/tokenFile', vault.tokenFile);
  config.kubernetes.accounts.forEach((a, i) => {
    if (a.kubeconfigFile) a.kubeconfigFile = abs(`/kubernetes/accounts/${i}/kubeconfigFile`, a.kubeconfigFile);
  });
}

/** What changed between two configs' account lists; unchanged accounts keep their watches. */
export interface AccountDiff {
  added: AccountConfig[];
  removed: AccountConfig[];
  changed: AccountConfig[];
  unchanged: AccountConfig[];
}

export function diffAccounts(before: readonly AccountConfig[], after: readonly AccountConfig[]): AccountDiff {
  const old = new Map(before.map((a) => [a.name, a]));
  const diff: AccountDiff = { added: [], removed: [], changed: [], unchanged: [] };
  for (const a of after) {
    const prev = old.get(a.name);
    if (!prev) diff.added.push(a);
    else if (stableJson(prev) === stableJson(a)) diff.unchanged.push(a);
    else diff.changed.push(a);
    old.delete(a.name);
  }
  diff.removed.push(...old.values());
  return diff;
}

/** JSON with sorted keys, so two equal configs compare equal whatever the key order in the file. */
export function stableJson(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}
