/**
 * The restricted Pod Security Standard as the API server enforces it: namespace labels, and the wait that proves every
 * Deployment's pods passed PodSecurity admission (the ReplicaSet controller creates them, so a rejection shows as its
 * ReplicaFailure condition, not as an error of the apply).
 */
import { expect } from 'vitest';

export const RESTRICTED = [
  'pod-security.kubernetes.io/enforce=restricted',
  'pod-security.kubernetes.io/warn=restricted',
];

export type Kubectl = (
  args: string[],
  allowFail?: boolean,
) => Promise<{ code: number; stdout: string; stderr: string }>;

interface ReplicaSet {
  metadata: { namespace: string; name: string };
  spec: { replicas: number };
  status: { replicas?: number; conditions?: { type: string; message: string }[] };
}

/**
 * Waits until every ReplicaSet created all its pods (each pod passed PodSecurity admission), failing at once on a
 * ReplicaFailure (the controller's report of a rejected pod). No scheduler runs: the pods stay Pending, admitted.
 * Reads every namespace: call it on a control plane of the test's own.
 */
export async function expectAllPodsAdmitted(kubectl: Kubectl): Promise<void> {
  for (;;) {
    const deployments = JSON.parse((await kubectl(['get', 'deployments', '-A', '-o', 'json'])).stdout) as {
      items: { spec: { replicas: number } }[];
    };
    const sets = (
      JSON.parse((await kubectl(['get', 'replicasets', '-A', '-o', 'json'])).stdout) as { items: ReplicaSet[] }
    ).items;
    const failed = sets.flatMap((rs) =>
      (rs.status.conditions ?? [])
        .filter((c) => c.type === 'ReplicaFailure')
        .map((c) => `${rs.metadata.namespace}/${rs.metadata.name}: ${c.message}`),
    );
    expect(failed).toEqual([]);
    const want = deployments.items.reduce((n, d) => n + d.spec.replicas, 0);
    const have = sets.reduce((n, rs) => n + (rs.status.replicas ?? 0), 0);
    if (deployments.items.length > 0 && sets.length === deployments.items.length && have === want) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}
