/**
 * The rig's agent signs in as a ServiceAccount, not as the admin: the admin is in system:masters, which API Priority
 * and Fairness exempts, so no flow-control fault could reach an agent using it (and a production agent is never
 * one). The account is bound to cluster-admin, as broad as the admin: the rig tests flow control, not RBAC.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { kubeRequest } from './kube-raw.js';

export interface AgentIdentity {
  namespace: string;
  serviceAccount: string;
  clusterRoleBinding: string;
  /** A bound token of the ServiceAccount (a day long: longer than any run of the matrix). */
  token: string;
}

export async function createAgentIdentity(kc: KubeConfig, namespace: string, suffix: string): Promise<AgentIdentity> {
  const serviceAccount = 'scale-agent';
  const clusterRoleBinding = `faults-agent-${suffix}`;
  await kubeRequest(kc, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: serviceAccount, namespace },
  });
  await kubeRequest(kc, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: clusterRoleBinding },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: serviceAccount, namespace }],
  });
  const tr = await kubeRequest<{ status: { token: string } }>(
    kc,
    'POST',
    `/api/v1/namespaces/${namespace}/serviceaccounts/${serviceAccount}/token`,
    { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds: 86_400 } },
  );
  return { namespace, serviceAccount, clusterRoleBinding, token: tr.status.token };
}

export async function deleteAgentIdentity(kc: KubeConfig, id: AgentIdentity): Promise<void> {
  await kubeRequest(kc, 'DELETE', `/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/${id.clusterRoleBinding}`);
}
