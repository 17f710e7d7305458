/**
 * Cluster DNS as in a user's cluster: CoreDNS (built from its Go module) as a Deployment in kube-system behind the
 * `kube-dns` Service at the address kubelet hands to pods. It answers only for the cluster's zone: no upstream
 * resolver, so no query leaves this machine.
 */
import { CLUSTER_DOMAIN, DNS_SERVICE_IP, IMAGES } from './layout.js';

const COREFILE = `.:53 {
    errors
    health :8080
    ready :8181
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 30
}
`;

export function corednsManifests(): object {
  const ns = 'kube-system';
  const labels = { 'k8s-app': 'kube-dns' };
  return {
    apiVersion: 'v1',
    kind: 'List',
    items: [
      { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: ns } },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRole',
        metadata: { name: 'system:coredns' },
        rules: [
          { apiGroups: [''], resources: ['endpoints', 'services', 'pods', 'namespaces'], verbs: ['list', 'watch'] },
          { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: { name: 'system:coredns' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
        subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: ns }],
      },
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'coredns', namespace: ns },
        data: { Corefile: COREFILE },
      },
      {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'coredns', namespace: ns, labels },
        spec: {
          replicas: 1,
          selector: { matchLabels: labels },
          template: {
            metadata: { labels },
            spec: {
              serviceAccountName: 'coredns',
              dnsPolicy: 'Default',
              containers: [
                {
                  name: 'coredns',
                  image: IMAGES.coredns,
                  imagePullPolicy: 'Never',
                  args: ['-conf', '/etc/coredns/Corefile'],
                  ports: [
                    { name: 'dns', containerPort: 53, protocol: 'UDP' },
                    { name: 'dns-tcp', containerPort: 53, protocol: 'TCP' },
                  ],
                  readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 1 },
                  livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                  volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                },
              ],
              volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
            },
          },
        },
      },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'kube-dns', namespace: ns, labels },
        spec: {
          clusterIP: DNS_SERVICE_IP,
          selector: labels,
          ports: [
            { name: 'dns', port: 53, protocol: 'UDP', targetPort: 53 },
            { name: 'dns-tcp', port: 53, protocol: 'TCP', targetPort: 53 },
          ],
        },
      },
    ],
  };
}
