import { readFileSync } from 'node:fs';
import type { Logger } from '../shared/logging.js';
import { SecretResolver, VaultEngine, type SecretEngine } from '../shared/secrets/index.js';
import type { AgentConfig } from './config.js';
import { KubeClient } from './kube/client.js';
import { KubernetesSecretEngine } from './kube/secret-engine.js';

const SA_NAMESPACE_FILE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

/** The agent's secret engines, from its config's `secrets` block (docs/secrets.md). */
export interface AgentSecrets {
  resolver: SecretResolver;
  stop(): void;
}

export function agentSecrets(config: AgentConfig, env: NodeJS.ProcessEnv, log: Logger): AgentSecrets {
  const k = config.secrets.kubernetes;
  let client: Promise<KubeClient> | undefined;
  // Created on first use: an agent without k8s references needs no access to its own cluster.
  const ownCluster = (): Promise<KubeClient> => {
    client ??= KubeClient.create(k.kubeconfigFile ? { kubeconfigFile: k.kubeconfigFile } : { serviceAccount: true });
    client.catch(() => (client = undefined));
    return client;
  };
  const kubernetes = new KubernetesSecretEngine(ownCluster, k.namespace ?? (env.POD_NAMESPACE || podNamespace()), log);
  const engines: SecretEngine[] = [kubernetes];
  const unconfigured: Record<string, string> = {};
  const vault = config.secrets.vault;
  if (vault && vault.enabled) engines.push(new VaultEngine(vault, env));
  else unconfigured.vault = 'vault references need secrets.vault (url, authMethod) in the agent config';
  return {
    resolver: new SecretResolver(engines, unconfigured),
    stop: () => {
      kubernetes.stop();
      void client?.then((c) => c.close()).catch(() => undefined);
    },
  };
}

function podNamespace(): string | undefined {
  try {
    return readFileSync(SA_NAMESPACE_FILE, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
