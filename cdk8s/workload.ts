import { Construct } from 'constructs';
import { k8s } from 'cdk8s-plus-28';

/** A volume the pod mounts read-only: a ConfigMap or a Secret. */
export interface WorkloadMount {
  readonly volume: string;
  readonly mountPath: string;
  readonly configMap?: string;
  readonly secret?: string;
}

export interface WorkloadProps {
  /** Container name and `app.kubernetes.io/component`. */
  readonly component: string;
  /** Name of the Deployment and its ServiceAccount. */
  readonly name: string;
  readonly labels: Record<string, string>;
  readonly selector: Record<string, string>;
  readonly replicas: number;
  readonly image: string;
  readonly args: string[];
  /** Environment in order; `valueFrom` entries as the API writes them. */
  readonly env: Record<string, unknown>[];
  readonly ports: { readonly name: string; readonly containerPort: number }[];
  readonly readinessProbe: Record<string, unknown>;
  readonly livenessProbe: Record<string, unknown>;
  readonly resources: { requests: Record<string, string>; limits: Record<string, string> };
  /** In the order the pod lists them. */
  readonly mounts: WorkloadMount[];
  /** Mode `agent` reads its own cluster with the pod's token; everything else runs without one. */
  readonly automountServiceAccountToken: boolean;
  /** Scheduling and metadata of the pods; `labels` add to the template only, never to selectors. */
  readonly pod?: {
    readonly nodeSelector?: Record<string, string>;
    readonly tolerations?: Record<string, unknown>[];
    readonly affinity?: Record<string, unknown>;
    readonly topologySpreadConstraints?: Record<string, unknown>[];
    readonly priorityClassName?: string;
    readonly annotations?: Record<string, string>;
    readonly labels?: Record<string, string>;
    readonly serviceAccountAnnotations?: Record<string, string>;
  };
  /**
   * A ClusterIP Service in front of one named port, the Service's port named as it: the plugin-server's REST API
   * (`http`), the agent's health port with /metrics (`health`).
   */
  readonly httpService?: { readonly name: string; readonly port: number; readonly targetPort: string };
}

/**
 * The one description of a scale-agent workload: ServiceAccount, Deployment (restricted Pod Security: non-root,
 * no privilege escalation, all capabilities dropped, read-only root, RuntimeDefault seccomp) and its HTTP Service
 * (REST, or the agent's metrics).
 * The Kustomize base is this construct at its defaults; manifests are this construct with a place's model.
 */
export class Workload extends Construct {
  constructor(scope: Construct, id: string, props: WorkloadProps) {
    super(scope, id);
    const pod = props.pod ?? {};
    new k8s.KubeServiceAccount(this, 'sa', {
      metadata: {
        name: props.name,
        labels: props.labels,
        ...(pod.serviceAccountAnnotations ? { annotations: pod.serviceAccountAnnotations } : {}),
      },
      automountServiceAccountToken: false,
    });
    new k8s.KubeDeployment(this, 'deployment', {
      metadata: { name: props.name, labels: props.labels },
      spec: {
        replicas: props.replicas,
        selector: { matchLabels: props.selector },
        template: {
          metadata: {
            labels: { ...pod.labels, ...props.labels },
            ...(pod.annotations ? { annotations: pod.annotations } : {}),
          },
          spec: {
            ...(scheduling(pod) as Partial<k8s.PodSpec>),
            serviceAccountName: props.name,
            automountServiceAccountToken: props.automountServiceAccountToken,
            securityContext: {
              runAsNonRoot: true,
              runAsUser: 10001,
              runAsGroup: 10001,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            containers: [
              {
                name: props.component,
                image: props.image,
                // Tags are pinned per place (overlay `images:`, chart `image.tag`), so a cached image is the right one.
                imagePullPolicy: 'IfNotPresent',
                args: props.args,
                env: props.env as unknown as k8s.EnvVar[],
                ...(props.ports.length > 0 ? { ports: props.ports.map((p) => ({ ...p, protocol: 'TCP' })) } : {}),
                readinessProbe: probe(props.readinessProbe),
                livenessProbe: probe(props.livenessProbe),
                resources: {
                  requests: quantities(props.resources.requests),
                  limits: quantities(props.resources.limits),
                },
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                volumeMounts: props.mounts.map((m) => ({ name: m.volume, mountPath: m.mountPath, readOnly: true })),
              },
            ],
            volumes: props.mounts.map((m) =>
              m.configMap
                ? { name: m.volume, configMap: { name: m.configMap } }
                : { name: m.volume, secret: { secretName: m.secret } },
            ),
          },
        },
      },
    });
    if (props.httpService) {
      new k8s.KubeService(this, 'http', {
        metadata: { name: props.httpService.name, labels: props.labels },
        spec: {
          type: 'ClusterIP',
          selector: props.selector,
          ports: [
            {
              name: props.httpService.targetPort,
              port: props.httpService.port,
              targetPort: k8s.IntOrString.fromString(props.httpService.targetPort),
              protocol: 'TCP',
              appProtocol: 'http',
            },
          ],
        },
      });
    }
  }
}

function quantities(q: Record<string, string>): Record<string, k8s.Quantity> {
  return Object.fromEntries(Object.entries(q).map(([k, v]) => [k, k8s.Quantity.fromString(v)]));
}

/** cdk8s serializes ports through IntOrString; a bare string would be written as 0. */
function probe(p: Record<string, unknown>): k8s.Probe {
  const httpGet = p.httpGet as { path: string; port: string | number } | undefined;
  if (!httpGet) return p as k8s.Probe;
  const port =
    typeof httpGet.port === 'number'
      ? k8s.IntOrString.fromNumber(httpGet.port)
      : k8s.IntOrString.fromString(httpGet.port);
  return { ...p, httpGet: { ...httpGet, port } } as k8s.Probe;
}

/** Lets voluntary disruptions (node drains) take at most `maxUnavailable` of a workload's pods at a time. */
export class DisruptionBudget extends Construct {
  constructor(
    scope: Construct,
    id: string,
    props: { name: string; labels: Record<string, string>; selector: Record<string, string>; maxUnavailable: number },
  ) {
    super(scope, id);
    new k8s.KubePodDisruptionBudget(this, 'pdb', {
      metadata: { name: props.name, labels: props.labels },
      spec: {
        maxUnavailable: k8s.IntOrString.fromNumber(props.maxUnavailable),
        selector: { matchLabels: props.selector },
      },
    });
  }
}

type PodProps = NonNullable<WorkloadProps['pod']>;

/** The pod-spec scheduling fields a topology sets, as the API spells them. */
export function scheduling(pod: PodProps): Record<string, unknown> {
  return {
    ...(pod.nodeSelector ? { nodeSelector: pod.nodeSelector } : {}),
    ...(pod.tolerations ? { tolerations: pod.tolerations } : {}),
    ...(pod.affinity ? { affinity: pod.affinity } : {}),
    ...(pod.topologySpreadConstraints ? { topologySpreadConstraints: pod.topologySpreadConstraints } : {}),
    ...(pod.priorityClassName ? { priorityClassName: pod.priorityClassName } : {}),
  };
}
