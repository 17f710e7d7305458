import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';

export type LoadBalancerProvider = 'aws' | 'gcp' | 'azure' | 'generic';

export interface GrpcServiceProps {
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  readonly port: number;
  /** Named container port the Service forwards to. @default 'grpc' */
  readonly targetPort?: string;
  /** @default - ClusterIP */
  readonly loadBalancer?: {
    readonly provider: LoadBalancerProvider;
    readonly internal: boolean;
    readonly sourceRanges?: string[];
    /** Extra annotations; they win over the provider's. */
    readonly annotations?: Record<string, string>;
  };
}

/**
 * Provider annotations for a plain L4 (TCP passthrough) load balancer: gRPC is HTTP/2 end to end with TLS in the
 * pod, so no L7 balancer may terminate or downgrade it.
 */
export function loadBalancerAnnotations(provider: LoadBalancerProvider, internal: boolean): Record<string, string> {
  switch (provider) {
    case 'aws':
      // AWS Load Balancer Controller: an NLB with IP targets.
      return {
        'service.beta.kubernetes.io/aws-load-balancer-type': 'external',
        'service.beta.kubernetes.io/aws-load-balancer-nlb-target-type': 'ip',
        'service.beta.kubernetes.io/aws-load-balancer-scheme': internal ? 'internal' : 'internet-facing',
      };
    case 'gcp':
      return internal ? { 'networking.gke.io/load-balancer-type': 'Internal' } : {};
    case 'azure':
      return internal ? { 'service.beta.kubernetes.io/azure-load-balancer-internal': 'true' } : {};
    case 'generic':
      return {};
  }
}

/** The plugin-server's gRPC Service: `appProtocol: grpc` tells HTTP/2-aware proxies and meshes what it carries. */
export class GrpcService extends Construct {
  constructor(scope: Construct, id: string, props: GrpcServiceProps) {
    super(scope, id);
    const lb = props.loadBalancer;
    const annotations = lb ? { ...loadBalancerAnnotations(lb.provider, lb.internal), ...(lb.annotations ?? {}) } : {};
    new k8s.KubeService(this, 'service', {
      metadata: {
        name: props.name,
        labels: props.labels,
        ...(Object.keys(annotations).length > 0 ? { annotations } : {}),
      },
      spec: {
        type: lb ? 'LoadBalancer' : 'ClusterIP',
        selector: props.selector,
        ports: [
          {
            name: 'grpc',
            port: props.port,
            targetPort: k8s.IntOrString.fromString(props.targetPort ?? 'grpc'),
            protocol: 'TCP',
            appProtocol: 'grpc',
          },
        ],
        ...(lb && (lb.sourceRanges?.length ?? 0) > 0 ? { loadBalancerSourceRanges: lb.sourceRanges } : {}),
      },
    });
  }
}
