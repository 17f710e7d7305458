/**
 * Synthetic Kubernetes objects of a chosen size, for load that looks like the real thing (ConfigMaps with
 * labels, annotations and data) without an API server.
 */
export function configMapJson(opts: {
  namespace: string;
  name: string;
  resourceVersion: string;
  bytes: number;
  uid?: string;
}): Buffer {
  const base = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: opts.name,
      namespace: opts.namespace,
      uid: opts.uid ?? `00000000-0000-4000-8000-${opts.name.padStart(12, '0').slice(-12)}`,
      resourceVersion: opts.resourceVersion,
      creationTimestamp: '2026-01-01T00:00:00Z',
      labels: { app: 'bench', 'app.kubernetes.io/managed-by': 'scale-agent-bench' },
      annotations: { 'bench.scale-agent.io/generation': opts.resourceVersion },
    },
    data: { payload: '' },
  };
  const without = Buffer.byteLength(JSON.stringify(base));
  base.data.payload = 'x'.repeat(Math.max(0, opts.bytes - without));
  return Buffer.from(JSON.stringify(base));
}
