import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DynamicAccount } from '../shared/proto.js';
import type { AccountConfig } from './config.js';

/**
 * Dynamic accounts the plugin-server assigns over the stream (AccountsChanged). Kubeconfig contents are written
 * to a private directory (0700, files 0600) because the Kubernetes client loads kubeconfigs from files; the
 * directory is removed when the agent stops, and a file when its account goes.
 */
export class DynamicAccountFiles {
  private dir: string | undefined;

  write(name: string, contents: Buffer): string {
    this.dir ??= mkdtempSync(join(tmpdir(), 'scale-agent-dynamic-'));
    const file = join(this.dir, `${name}.kubeconfig`);
    writeFileSync(file, contents, { mode: 0o600 });
    return file;
  }

  remove(name: string): void {
    if (this.dir) rmSync(join(this.dir, `${name}.kubeconfig`), { force: true });
  }

  cleanup(): void {
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
    this.dir = undefined;
  }
}

/** Identifies a definition's content (including the kubeconfig) without keeping the kubeconfig around. */
export function definitionFingerprint(d: DynamicAccount): string {
  const a = d.account;
  return createHash('sha256')
    .update(
      JSON.stringify([
        a?.name,
        a?.namespaces,
        a?.omitNamespaces,
        a?.kinds,
        a?.omitKinds,
        a?.permissions,
        a?.onlySpinnakerManaged,
        a?.cacheAllApplicationRelationships,
        d.kubeconfigFile,
        d.context,
        d.serviceAccount,
        d.onlyNamespacedResources,
      ]),
    )
    .update(d.kubeconfig)
    .digest('hex');
}

/** The account config the AccountRunner needs; `problem` when the definition cannot be used. */
export function dynamicAccountConfig(
  d: DynamicAccount,
  files: DynamicAccountFiles,
): { config: AccountConfig } | { problem: string } {
  const a = d.account;
  if (!a?.name) return { problem: 'dynamic account without a name' };
  let kubeconfigFile: string | undefined;
  if (d.kubeconfig.length > 0) kubeconfigFile = files.write(a.name, Buffer.from(d.kubeconfig));
  else if (d.kubeconfigFile) kubeconfigFile = d.kubeconfigFile;
  else if (!d.serviceAccount) return { problem: `dynamic account ${a.name} has no kubeconfig and no serviceAccount` };
  return {
    config: {
      name: a.name,
      ...(kubeconfigFile ? { kubeconfigFile } : {}),
      serviceAccount: !kubeconfigFile && d.serviceAccount,
      ...(d.context && kubeconfigFile ? { context: d.context } : {}),
      namespaces: [...a.namespaces],
      omitNamespaces: [...a.omitNamespaces],
      kinds: [...a.kinds],
      omitKinds: [...a.omitKinds],
      onlyNamespacedResources: d.onlyNamespacedResources,
      permissions: { READ: [...(a.permissions?.read ?? [])], WRITE: [...(a.permissions?.write ?? [])] },
      onlySpinnakerManaged: a.onlySpinnakerManaged,
      cacheAllApplicationRelationships: a.cacheAllApplicationRelationships,
    },
  };
}
