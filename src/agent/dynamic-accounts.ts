import { createHash } from 'node:crypto';
import { optionsFromWire } from '../shared/account-options.js';
import type { DynamicAccount } from '../shared/proto.js';
import type { AccountConfig } from './config.js';

/** Identifies a definition's content (including the kubeconfig) without keeping the kubeconfig around. */
export function definitionFingerprint(d: DynamicAccount): string {
  const a = d.account;
  return createHash('sha256')
    .update(
      JSON.stringify([
        a?.name,
        a && optionsFromWire(a),
        d.kubeconfigFile,
        d.context,
        d.serviceAccount,
        d.onlyNamespacedResources,
      ]),
    )
    .update(d.kubeconfig)
    .digest('hex');
}

/**
 * The account config the AccountRunner needs; `problem` when the definition cannot be used. Kubeconfig contents stay
 * in memory (the Kubernetes access layer loads them from there): the agent's pod has a read-only root filesystem and
 * no writable /tmp, and a kubeconfig written to disk would outlive a crash.
 */
export function dynamicAccountConfig(d: DynamicAccount): { config: AccountConfig } | { problem: string } {
  const a = d.account;
  if (!a?.name) return { problem: 'dynamic account without a name' };
  const source =
    d.kubeconfig.length > 0
      ? { kubeconfigContents: Buffer.from(d.kubeconfig).toString('utf8') }
      : d.kubeconfigFile
        ? { kubeconfigFile: d.kubeconfigFile }
        : undefined;
  if (!source && !d.serviceAccount) {
    return { problem: `dynamic account ${a.name} has no kubeconfig and no serviceAccount` };
  }
  return {
    config: {
      name: a.name,
      ...source,
      serviceAccount: !source && d.serviceAccount,
      ...(d.context && source ? { context: d.context } : {}),
      ...optionsFromWire(a),
      onlyNamespacedResources: d.onlyNamespacedResources,
    },
  };
}
