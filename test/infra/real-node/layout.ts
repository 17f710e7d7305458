/**
 * Where the real node lives on this machine. One node per machine: kubelet and containerd use fixed host paths
 * and ports whatever their configuration says, so these are fixed too, and lock.ts makes users take turns.
 *
 * All addresses are in 10.250.0.0/16, which preflight.ts checks no route of this machine already uses:
 * - the node's address is a second address of the loopback link (kernels without the dummy link type are common
 *   on CI VMs), so it is local to this machine: pods reach it through their bridge's gateway, nothing outside can;
 *   the API server, kubelet and kube-proxy listen there;
 * - the Service range is routed to the loopback link, so a ClusterIP that kube-proxy has not translated dies there;
 * - the pods' range sits on a bridge; pods get a route to 10.250.0.0/16 only (no default route), and a firewall
 *   rule rejects forwarded pod traffic to anywhere else.
 */
export const NET = '10.250.0.0/16';
export const NODE_IP = '10.250.0.1';
export const SERVICE_CIDR = '10.250.64.0/24';
export const KUBERNETES_SERVICE_IP = '10.250.64.1';
export const DNS_SERVICE_IP = '10.250.64.10';
export const POD_CIDR = '10.250.128.0/24';
export const CLUSTER_DOMAIN = 'cluster.local';
export const NODE_NAME = 'scale-agent-node';
/** The link that holds the node's address, and the pods' bridge (pods' veths are `veth*` attached to it). */
export const NODE_IP_LINK = 'lo';
export const BRIDGE = 'sa-cni0';
/** The firewall chain that keeps pod traffic on this machine (filter table, jumped to from FORWARD). */
export const EGRESS_CHAIN = 'SCALE-AGENT-NODE-EGRESS';
/** Ports fixed by kubelet (its API, healthz) and chosen here for kube-proxy (healthz, metrics). */
export const KUBELET_PORT = 10250;
export const KUBELET_HEALTHZ_PORT = 10248;
export const KUBE_PROXY_HEALTHZ_PORT = 10256;
export const KUBE_PROXY_METRICS_PORT = 10249;

/**
 * Paths outside the node's own directory that kubelet, containerd and the CNI plugins create whatever they are
 * told: removed after the node stops when they did not exist before it started.
 */
export const FIXED_PATHS = [
  '/var/lib/kubelet',
  '/var/log/containers',
  '/var/log/pods',
  '/var/lib/cni',
  '/run/containerd',
  '/run/netns',
  '/var/run/nri',
  '/opt/containerd',
];

/** Images the node runs, built locally by tools/node-images (no registry is reachable). */
export const IMAGES = {
  pause: 'scale-agent.invalid/pause:1',
  coredns: 'scale-agent.invalid/coredns:1',
  testHttp: 'scale-agent.invalid/test-http:1',
} as const;
