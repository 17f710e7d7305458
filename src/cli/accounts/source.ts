/**
 * Where `scale-agent accounts migrate` reads Clouddriver's Kubernetes accounts besides a running Clouddriver
 * (accountsFromClouddriver, shared with the plugin-server's automatic migration): a Clouddriver/Halyard-style YAML
 * file (`kubernetes.accounts[]`, or Halyard's `providers.kubernetes.accounts[]`, at the top level or in its one
 * deployment configuration).
 */
import type { SourceAccount } from '../../shared/clouddriver-accounts.js';
import { ScaleAgentError } from '../../shared/errors.js';
import { readYamlFile } from '../../shared/yaml-config.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Accounts of a YAML file; unparseable YAML or a wrong shape names the file and line. */
export function accountsFromFile(file: string): SourceAccount[] {
  const doc = readYamlFile(file);
  const at = (pointer: string): string => {
    // At the key of a map entry (`accounts:`), where an editor should jump to, rather than at its value.
    const line = doc.locate(pointer, { key: true })?.line;
    return line === undefined ? file : `${file}:${line}`;
  };
  const root = doc.data;
  const candidates: [string, unknown][] = [];
  if (isObject(root)) {
    const k8s = (o: Record<string, unknown>, base: string): [string, unknown] | undefined => {
      if (isObject(o.kubernetes) && 'accounts' in o.kubernetes)
        return [`${base}/kubernetes/accounts`, o.kubernetes.accounts];
      const p = o.providers;
      if (isObject(p) && isObject(p.kubernetes) && 'accounts' in p.kubernetes) {
        return [`${base}/providers/kubernetes/accounts`, p.kubernetes.accounts];
      }
      return undefined;
    };
    const top = k8s(root, '');
    if (top) candidates.push(top);
    const deployments = root.deploymentConfigurations;
    if (Array.isArray(deployments)) {
      for (const [i, d] of deployments.entries()) {
        const found = isObject(d) ? k8s(d, `/deploymentConfigurations/${i}`) : undefined;
        if (found) candidates.push(found);
      }
    }
  }
  if (candidates.length === 0) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `${file}: no kubernetes.accounts list (nor Halyard's providers.kubernetes.accounts)`,
      {
        details: [{ file, message: 'no kubernetes.accounts list' }],
      },
    );
  }
  if (candidates.length > 1) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `${file}: ${candidates.length} account lists (${candidates.map(([p]) => p).join(', ')}); give a file with one`,
    );
  }
  const [pointer, list] = candidates[0]!;
  if (!Array.isArray(list)) {
    throw new ScaleAgentError('INVALID_INPUT', `${at(pointer)}: ${dotted(pointer)} must be a list of accounts`, {
      details: [{ path: pointer, message: 'must be a list of accounts' }],
    });
  }
  return list.map((raw, i) => ({
    raw,
    where: `${at(`${pointer}/${i}`)} ${dotted(pointer)}[${i}]`,
    type: 'kubernetes',
    rendered: false,
  }));
}

/** `/deploymentConfigurations/0/providers/kubernetes/accounts` → `deploymentConfigurations[0].providers...`. */
function dotted(pointer: string): string {
  return pointer
    .slice(1)
    .split('/')
    .map((s, i) => (/^\d+$/.test(s) ? `[${s}]` : `${i ? '.' : ''}${s}`))
    .join('');
}
