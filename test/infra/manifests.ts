/**
 * Kubernetes objects that end-to-end and integration tests create again and again, as plain JSON for kubectl or the
 * API server.
 */

/** `count` ConfigMaps `${prefix}-${from}` … in one List, for one `kubectl apply -f -`. */
export function configMapList(ns: string, prefix: string, from: number, to: number): string {
  const items = [];
  for (let i = from; i < to; i++) {
    items.push({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: `${prefix}-${i}`, namespace: ns },
      data: { i: String(i) },
    });
  }
  return JSON.stringify({ apiVersion: 'v1', kind: 'List', items });
}

/**
 * A namespaced CustomResourceDefinition with one served version `v1`. Without a schema the custom resources keep
 * every field (x-kubernetes-preserve-unknown-fields): client-node's model drops that field, so send it as raw JSON.
 */
export function customResourceDefinition(o: {
  group: string;
  kind: string;
  plural: string;
  schema?: object;
}): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${o.plural}.${o.group}` },
    spec: {
      group: o.group,
      scope: 'Namespaced',
      names: { plural: o.plural, singular: o.kind.toLowerCase(), kind: o.kind },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          schema: { openAPIV3Schema: o.schema ?? { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
        },
      ],
    },
  };
}

/** A ReplicaSet of `replicas` Pods labelled `labels` (its selector too) that run `podSpec`. */
export function replicaSet(
  name: string,
  labels: Record<string, string>,
  replicas: number,
  podSpec: Record<string, unknown>,
): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'ReplicaSet',
    metadata: { name },
    spec: {
      replicas,
      // Copies: an executor that adds a label to the template must not change the selector with it.
      selector: { matchLabels: { ...labels } },
      template: { metadata: { labels: { ...labels } }, spec: podSpec },
    },
  };
}
