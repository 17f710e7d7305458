/**
 * The node's configuration files, as pure functions of its directories (the settings that worked on a 2-core,
 * cgroup v1 VM without CAP_SYS_RESOURCE; docs/testing.md has the why of each).
 */
import {
  BRIDGE,
  CLUSTER_DOMAIN,
  DNS_SERVICE_IP,
  IMAGES,
  KUBE_PROXY_HEALTHZ_PORT,
  KUBE_PROXY_METRICS_PORT,
  KUBELET_HEALTHZ_PORT,
  KUBELET_PORT,
  NET,
  NODE_IP,
  NODE_NAME,
  POD_CIDR,
} from './layout.js';

export interface NodeDirs {
  /** The node's private directory (kubelet's root, containerd's root and state, configs, logs). */
  dir: string;
  binDir: string;
  runc: string;
  containerdSocket: string;
  cniConfDir: string;
  caCert: string;
  kubeletCert: string;
  kubeletKey: string;
  kubeletKubeconfig: string;
  kubeProxyKubeconfig: string;
  resolvConf: string;
}

export function containerdToml(d: NodeDirs): string {
  return `version = 3
root = '${d.dir}/containerd/root'
state = '${d.dir}/containerd/state'
# Plugins that would write to fixed host paths (/opt/containerd, /var/run/nri) and that the node does not use.
disabled_plugins = ['io.containerd.internal.v1.opt', 'io.containerd.nri.v1.nri', 'io.containerd.tracing.processor.v1.otlp']

[grpc]
  address = '${d.containerdSocket}'

[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '${IMAGES.pause}'

[plugins.'io.containerd.cri.v1.runtime']
  # Without CAP_SYS_RESOURCE (CI VMs drop it) no process may lower its OOM score, and runc fails every sandbox
  # ("can't get final child's PID from pipe") when asked for containerd's default -998.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '${d.runc}'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['${d.binDir}']
    conf_dir = '${d.cniConfDir}'

[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = '127.0.0.1'
  stream_server_port = '0'
`;
}

/** A bridge with the pods' range, without masquerade. */
export function cniConflist(d: NodeDirs): string {
  return JSON.stringify(
    {
      cniVersion: '1.0.0',
      name: 'scale-agent-node',
      plugins: [
        {
          type: 'bridge',
          bridge: BRIDGE,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          // Pods get a route to the node's network only, no default route: nothing they send can leave.
          ipam: {
            type: 'host-local',
            ranges: [[{ subnet: POD_CIDR }]],
            routes: [{ dst: NET }],
            dataDir: `${d.dir}/cni-ipam`,
          },
        },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(d: NodeDirs): string {
  return JSON.stringify(
    {
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: NODE_IP,
      port: KUBELET_PORT,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: KUBELET_HEALTHZ_PORT,
      authentication: {
        anonymous: { enabled: false },
        webhook: { enabled: true },
        x509: { clientCAFile: d.caCert },
      },
      authorization: { mode: 'Webhook' },
      tlsCertFile: d.kubeletCert,
      tlsPrivateKeyFile: d.kubeletKey,
      rotateCertificates: false,
      serverTLSBootstrap: false,
      containerRuntimeEndpoint: `unix://${d.containerdSocket}`,
      cgroupDriver: 'cgroupfs',
      // kubelet 1.36 refuses cgroup v1 hosts unless told otherwise (then it only warns); CI VMs are still v1.
      failCgroupV1: false,
      failSwapOn: false,
      clusterDNS: [DNS_SERVICE_IP],
      clusterDomain: CLUSTER_DOMAIN,
      resolvConf: d.resolvConf,
      podLogsDir: `${d.dir}/pod-logs`,
      // Its default is under /usr/libexec, which kubelet would create.
      volumePluginDir: `${d.dir}/volume-plugins`,
      // Images are imported, not pulled: garbage-collecting one would lose it for good.
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      // A developer's nearly full disk must not evict the test pods.
      evictionHard: { 'memory.available': '50Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
      serializeImagePulls: false,
      maxPods: 60,
    },
    null,
    2,
  );
}

export function kubeProxyConfig(d: NodeDirs): string {
  return JSON.stringify(
    {
      apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
      kind: 'KubeProxyConfiguration',
      mode: 'iptables',
      clientConnection: { kubeconfig: d.kubeProxyKubeconfig },
      hostnameOverride: NODE_NAME,
      bindAddress: NODE_IP,
      healthzBindAddress: `127.0.0.1:${KUBE_PROXY_HEALTHZ_PORT}`,
      metricsBindAddress: `127.0.0.1:${KUBE_PROXY_METRICS_PORT}`,
      clusterCIDR: POD_CIDR,
      nodePortAddresses: [`${NODE_IP}/32`],
      // 0 leaves the machine's conntrack sysctls as they are (kube-proxy would otherwise raise them for good).
      conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
      // masqueradeAll: a reply from a pod on the same bridge returns through the host, where it is un-NATed,
      // whether or not bridged traffic passes iptables on this machine. localhostNodePorts would set route_localnet.
      iptables: { masqueradeAll: true, localhostNodePorts: false, syncPeriod: '30s', minSyncPeriod: '0s' },
    },
    null,
    2,
  );
}
