import { ScaleAgentError } from '../shared/errors.js';
import { buildPlaces } from './model.js';
import type { Obj } from './serialize.js';
import { renderPlace } from './synth.js';
import type { Account, Agent, Topology } from './topology.js';

/**
 * What `scale-agent kubeconfig` needs to mint one account's credentials: the objects synth emits for the
 * account's RBAC place (applied to the target cluster), the ServiceAccount they bind, and where the agent group
 * reads the kubeconfig (Secret name and key in the agent's namespace, the context it selects). Taken from the
 * model, so the command and synth cannot disagree.
 */
export interface AccountCredentials {
  account: Account;
  agent: Agent;
  /** The account place's objects in apply order, exactly as synth writes them. */
  objects: Obj[];
  serviceAccount: { name: string; namespace: string };
  /** The `kubernetes.io/service-account-token` Secret among `objects`. */
  tokenSecret: string;
  /** The Secret the agent group mounts, in the namespace of its workload. */
  kubeconfigSecret: { name: string; namespace: string; key: string };
  /** The context the agent selects in the kubeconfig; absent: the file's current-context. */
  context?: string;
}

/** Pure: the credentials target of a kubeconfig account; a clear error for any account that has none. */
export function accountCredentials(t: Topology, accountName: string): AccountCredentials {
  const agent = t.agents.find((a) => a.accounts.some((acc) => acc.name === accountName));
  const account = agent?.accounts.find((acc) => acc.name === accountName);
  if (!agent || !account) {
    const known = t.agents.filter((a) => a.mode !== 'agent').flatMap((a) => a.accounts.map((acc) => acc.name));
    throw new ScaleAgentError(
      'NOT_FOUND',
      `topology ${t.name} has no account '${accountName}'` +
        (known.length > 0 ? `; kubeconfig accounts: ${known.join(', ')}` : '; it has no kubeconfig accounts'),
    );
  }
  if (agent.mode === 'agent' || account.serviceAccount || !account.kubeconfigSecret) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `account '${accountName}' (${account.path}) is served by agent group ${agent.name} in mode ${agent.mode}: ` +
        "it reads its cluster with the agent pod's own ServiceAccount, so it needs no kubeconfig",
    );
  }
  const places = buildPlaces(t, undefined);
  const rbacPlace = places.find((p) => p.kind === 'account-rbac' && p.rbac?.account.name === accountName);
  if (!rbacPlace?.rbac) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `account '${accountName}' has rbac.create: false (${account.path}/rbac/create): synth emits no ServiceAccount ` +
        'or RBAC for it, so there is nothing to mint a token for; give it a kubeconfig of your own',
    );
  }
  const agentNamespace = places.find((p) => p.kind === 'agent' && p.agent === agent)?.workload?.namespace;
  const objects = renderPlace(rbacPlace);
  const token = objects.find((o) => o.kind === 'Secret' && o.type === 'kubernetes.io/service-account-token');
  if (!token || agentNamespace === undefined) {
    throw new ScaleAgentError('INTERNAL', `account '${accountName}': the model has no token Secret or agent workload`);
  }
  return {
    account,
    agent,
    objects,
    serviceAccount: rbacPlace.rbac.subject,
    tokenSecret: String((token.metadata as Obj).name),
    kubeconfigSecret: {
      name: account.kubeconfigSecret.name,
      key: account.kubeconfigSecret.key,
      namespace: agentNamespace,
    },
    ...(account.context !== undefined ? { context: account.context } : {}),
  };
}
