import { stringify } from 'yaml';

/** A kubeconfig with one cluster, user and context, all named for the account (the context as the agent selects it). */
export function kubeconfigYaml(opts: {
  account: string;
  context: string;
  server: string;
  caPem: string;
  token: string;
}): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: opts.account,
        cluster: { server: opts.server, 'certificate-authority-data': Buffer.from(opts.caPem).toString('base64') },
      },
    ],
    users: [{ name: opts.account, user: { token: opts.token } }],
    contexts: [{ name: opts.context, context: { cluster: opts.account, user: opts.account } }],
    'current-context': opts.context,
  });
}

/**
 * The Secret holding this one account's key, which the agent group mounts (or, with the topology's
 * `kubeconfigSecret.watch`, reads and watches through the API server). Several accounts may share the Secret with
 * different keys; applied server-side with a field manager per account, each run owns only its own key.
 */
export function kubeconfigSecretYaml(
  secret: { name: string; namespace: string; key: string },
  kubeconfig: string,
): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: secret.name, namespace: secret.namespace },
    type: 'Opaque',
    data: { [secret.key]: Buffer.from(kubeconfig).toString('base64') },
  });
}

export const secretFieldManager = (account: string): string => `scale-agent-kubeconfig-${account}`;

export function applySecretCommand(account: string, file: string): string {
  return `kubectl apply --server-side --field-manager=${secretFieldManager(account)} -f ${file}`;
}
