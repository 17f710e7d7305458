import { writeFile } from 'node:fs/promises';
import { accountCredentials, loadTopology, type AccountCredentials } from '../../compiler/index.js';
import { ScaleAgentError } from '../../shared/errors.js';
import { applySecretCommand, kubeconfigSecretYaml, kubeconfigYaml } from './files.js';
import { describePermission, TargetCluster, type Manifest, type Permission } from './target-cluster.js';
import { mintToken, tokenPermissions, type TokenInfo, type TokenMode } from './token.js';

export interface MintOptions {
  topologyFile: string;
  account: string;
  /** The target cluster's admin kubeconfig, and the context in it. */
  kubeconfig: string;
  context?: string;
  /** The API server URL as the agent reaches it, when it differs from the admin kubeconfig's. */
  server?: string;
  token: TokenMode;
  out: string;
  secretOut: string;
  dryRun: boolean;
}

export interface MintResult {
  account: string;
  agentGroup: string;
  mode: string;
  cluster: string;
  /** The admin kubeconfig's user, as the API server names it. */
  caller?: string;
  serviceAccount: { name: string; namespace: string };
  dryRun: boolean;
  /** What is (or, with dryRun, would be) applied to the target cluster, in order. */
  objects: Manifest[];
  token?: TokenInfo;
  kubeconfig?: { file: string; context: string; server: string };
  secret: { file?: string; name: string; namespace: string; key: string; apply?: string };
}

const CA_CONFIGMAP = 'kube-root-ca.crt';
const CA_WAIT_MS = 30_000;

/**
 * `scale-agent kubeconfig`: applies the account's ServiceAccount and RBAC (synth's objects for its RBAC place) to
 * the target cluster, mints a token for that ServiceAccount, and writes a kubeconfig plus the Secret manifest the
 * agent group mounts. Every permission the run needs is checked first, so a caller short of one changes nothing.
 */
export async function mintKubeconfig(o: MintOptions): Promise<MintResult> {
  const { topology } = await loadTopology(o.topologyFile);
  const creds = accountCredentials(topology, o.account);
  // The long-lived token Secret only when asked for: a TokenRequest run leaves no credential that never expires.
  const objects = (creds.objects as Manifest[]).filter(
    (m) => o.token.kind === 'long-lived' || !(m.kind === 'Secret' && m.metadata.name === creds.tokenSecret),
  );
  const cluster = await TargetCluster.connect(o.kubeconfig, o.context);
  try {
    const caller = await cluster.whoAmI();
    const sa = creds.serviceAccount;
    const needsCaConfigMap = !cluster.client.caPem?.length;
    const wanted: Permission[] = [
      ...(await Promise.all(objects.map((m) => cluster.applyPermissions(m)))).flat(),
      ...tokenPermissions(o.token, sa, creds.tokenSecret),
      ...(needsCaConfigMap
        ? [{ verb: 'get', group: '', resource: 'configmaps', namespace: sa.namespace, name: CA_CONFIGMAP }]
        : []),
    ];
    const missing = await cluster.missing(wanted);
    if (missing.length > 0) throw forbidden(caller, cluster.where, missing);
    await dryRunAll(cluster, objects);
    const base: MintResult = {
      account: creds.account.name,
      agentGroup: creds.agent.name,
      mode: creds.agent.mode,
      cluster: cluster.client.server.origin,
      ...(caller ? { caller } : {}),
      serviceAccount: sa,
      dryRun: o.dryRun,
      objects,
      secret: { ...creds.kubeconfigSecret },
    };
    if (o.dryRun) return base;

    for (const m of objects) await applyOne(cluster, m);
    const minted = await mintToken(cluster, o.token, sa, creds.tokenSecret);
    const caPem = needsCaConfigMap ? await rootCa(cluster, sa.namespace) : (cluster.client.caPem as Buffer).toString();
    const server = o.server ?? cluster.client.server.origin;
    const context = contextOf(creds);
    const kubeconfig = kubeconfigYaml({ account: creds.account.name, context, server, caPem, token: minted.token });
    // Both files carry the token: readable by their owner only.
    await writeFile(o.out, kubeconfig, { mode: 0o600 });
    await writeFile(o.secretOut, kubeconfigSecretYaml(creds.kubeconfigSecret, kubeconfig), { mode: 0o600 });
    const { token: _token, ...tokenInfo } = minted;
    return {
      ...base,
      token: tokenInfo as TokenInfo,
      kubeconfig: { file: o.out, context, server },
      secret: { ...base.secret, file: o.secretOut, apply: applySecretCommand(creds.account.name, o.secretOut) },
    };
  } finally {
    cluster.close();
  }
}

/** The agent selects the topology's `context` when it names one; otherwise the file's current-context. */
const contextOf = (c: AccountCredentials): string => c.context ?? c.account.name;

/**
 * A server-side dry run of every object before the first is stored: what access reviews cannot see (RBAC refusing
 * to grant rights the caller does not hold, a namespace of the account that does not exist, admission) fails here,
 * with nothing changed. Objects in a namespace this run creates cannot be tried before it exists and are skipped.
 */
async function dryRunAll(cluster: TargetCluster, objects: Manifest[]): Promise<void> {
  const created = new Set(objects.filter((m) => m.kind === 'Namespace').map((m) => m.metadata.name));
  for (const m of objects) {
    if (m.metadata.namespace && created.has(m.metadata.namespace)) continue;
    await applyOne(cluster, m, true);
  }
}

async function applyOne(cluster: TargetCluster, m: Manifest, dryRun = false): Promise<void> {
  try {
    await cluster.apply(m, { dryRun });
  } catch (e) {
    const at = m.metadata.namespace ? ` in namespace ${m.metadata.namespace}` : '';
    throw new ScaleAgentError(
      e instanceof ScaleAgentError ? e.kind : 'INTERNAL',
      `cannot apply ${m.kind} ${m.metadata.name}${at}${dryRun ? ' (dry run; nothing was changed)' : ''}: ` +
        (e as Error).message,
      { cause: e },
    );
  }
}

/** The cluster's CA as every namespace gets it (root-ca-cert-publisher fills a new namespace's copy shortly after). */
async function rootCa(cluster: TargetCluster, namespace: string): Promise<string> {
  const pem = await cluster.waitFor(
    `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps/${CA_CONFIGMAP}`,
    { verb: 'get', resource: 'configmaps', namespace, name: CA_CONFIGMAP },
    (cm: { data?: Record<string, string> }) => cm.data?.['ca.crt'],
    CA_WAIT_MS,
  );
  if (pem === undefined) {
    throw new ScaleAgentError(
      'TIMEOUT',
      `ConfigMap ${namespace}/${CA_CONFIGMAP} has no ca.crt after ${CA_WAIT_MS / 1000} s, and the admin kubeconfig ` +
        'has no certificate-authority: give a kubeconfig that has one',
    );
  }
  return pem;
}

function forbidden(caller: string | undefined, where: string, missing: Permission[]): ScaleAgentError {
  const who = caller ? `${caller} at ${where}` : `the user of ${where}`;
  return new ScaleAgentError(
    'FORBIDDEN',
    `${who} lacks ${missing.length === 1 ? 'a permission' : `${missing.length} permissions`} this needs, so ` +
      `nothing was changed:\n${missing.map((p) => `  cannot ${describePermission(p)}`).join('\n')}\n` +
      'Use the cluster-admin kubeconfig of the target cluster (or grant these).',
  );
}
