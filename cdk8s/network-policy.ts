import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';

/** A NetworkPolicyPeer as the API spells it (pod, namespace or ipBlock selectors). */
export type NetworkPeer = Record<string, unknown>;

interface Common {
  name: string;
  labels: Record<string, string>;
  selector: Record<string, string>;
}

const tcp = (port: string | number): k8s.NetworkPolicyPort => ({
  port: typeof port === 'number' ? k8s.IntOrString.fromNumber(port) : k8s.IntOrString.fromString(port),
  protocol: 'TCP',
});
/** An empty peer list is no `from`/`to` at all, which NetworkPolicy reads as any source or destination. */
const peers = (key: 'from' | 'to', list: NetworkPeer[]) => (list.length > 0 ? { [key]: list } : {});

/**
 * Ingress to the plugin-server: gRPC (agents) and REST with /metrics, each from its peers; the chart's
 * templates/network-policy.yaml renders the same object from the values the compiler writes.
 */
export class PluginServerNetworkPolicy extends Construct {
  constructor(scope: Construct, id: string, props: Common & { grpcFrom: NetworkPeer[]; httpFrom: NetworkPeer[] }) {
    super(scope, id);
    new k8s.KubeNetworkPolicy(this, 'policy', {
      metadata: { name: props.name, labels: props.labels },
      spec: {
        podSelector: { matchLabels: props.selector },
        policyTypes: ['Ingress'],
        ingress: [
          { ports: [tcp('grpc')], ...peers('from', props.grpcFrom) },
          { ports: [tcp('http')], ...peers('from', props.httpFrom) },
        ] as k8s.NetworkPolicyIngressRule[],
      },
    });
  }
}

/**
 * An agent: ingress only to the health port (/metrics) from `metricsFrom` (the kubelet's probes come from the node,
 * which NetworkPolicy always admits), egress to DNS and to `egressPorts` (API servers, the plugin-server) on
 * `egressTo`; the chart's templates/network-policy.yaml renders the same object from the values.
 */
export class AgentNetworkPolicy extends Construct {
  constructor(
    scope: Construct,
    id: string,
    props: Common & { metricsFrom: NetworkPeer[]; egressPorts: number[]; egressTo: NetworkPeer[] },
  ) {
    super(scope, id);
    const dns: k8s.NetworkPolicyPort[] = [
      { port: k8s.IntOrString.fromNumber(53), protocol: 'UDP' },
      { port: k8s.IntOrString.fromNumber(53), protocol: 'TCP' },
    ];
    new k8s.KubeNetworkPolicy(this, 'policy', {
      metadata: { name: props.name, labels: props.labels },
      spec: {
        podSelector: { matchLabels: props.selector },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [{ ports: [tcp('health')], ...peers('from', props.metricsFrom) }] as k8s.NetworkPolicyIngressRule[],
        egress: [
          { ports: dns },
          ...(props.egressPorts.length > 0
            ? [{ ports: props.egressPorts.map(tcp), ...peers('to', props.egressTo) }]
            : []),
        ] as k8s.NetworkPolicyEgressRule[],
      },
    });
  }
}
