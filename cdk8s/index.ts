export { standardLabels, selectorLabels, PART_OF } from './labels.js';
export {
  AccountRbac,
  SecretReaderRbac,
  accountRbacManifests,
  secretReaderRbacManifests,
  type AccountRbacProps,
  type PolicyRule,
  type SecretReaderRbacProps,
} from './account-rbac.js';
export { ConfigFile, type ConfigFileProps } from './config-file.js';
export { TlsSecret, CertManagerCertificate, type TlsSecretProps, type CertManagerCertificateProps } from './tls.js';
export { GrpcService, loadBalancerAnnotations, type GrpcServiceProps, type LoadBalancerProvider } from './grpc-lb.js';
export {
  KeySecret,
  Namespace,
  ServiceAccount,
  namespaceManifests,
  serviceAccountManifests,
  type KeySecretProps,
} from './core.js';
export { addManifests, type IdentifiedManifest, type Manifest } from './manifest.js';
export { Workload, DisruptionBudget, scheduling, type WorkloadProps, type WorkloadMount } from './workload.js';
export { PluginServerNetworkPolicy, AgentNetworkPolicy, type NetworkPeer } from './network-policy.js';
