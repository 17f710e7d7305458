/**
 * Where `scale-agent accounts migrate` reads Clouddriver's Kubernetes accounts: a running Clouddriver's
 * `GET /credentials?expand=true`, or a Clouddriver/Halyard-style YAML file (`kubernetes.accounts[]`, or Halyard's
 * `providers.kubernetes.accounts[]`, at the top level or in its one deployment configuration).
 */
import { ScaleAgentError } from '../../shared/errors.js';
import { readYamlFile } from '../../shared/yaml-config.js';

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
  if (!Array.isArray(body)) {
    throw new ScaleAgentError('INVALID_INPUT', `GET ${target.href}: expected a list of accounts`);
  }
  return body.map((raw, i) => {
    const o = isObject(raw) ? raw : {};
    const type = typeof o.cloudProvider === 'string' ? o.cloudProvider : typeof o.type === 'string' ? o.type : '';
    return { raw, where: `${target.href} [${i}]`, type, rendered: true };
  });
}
