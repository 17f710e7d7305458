import type { Place, RbacModel, TlsDecision, WorkloadModel } from './model.js';
import { NAME_PREFIX } from './names.js';
import { RUNTIMES } from './runtimes.js';

/** Values for charts/scale-agent that install one place, projected from its model; values.schema.json describes them. */
export function helmValues(p: Place): Record<string, unknown> {
  const values: Record<string, unknown> = {
    fullnameOverride: NAME_PREFIX,
    pluginServer: { enabled: false },
    agent: { enabled: false },
    rbac: { accounts: p.rbac ? [rbacEntry(p.rbac)] : [] },
  };
  const w = p.workload;
  if (w && p.kind === 'plugin-server') {
    const g = p.grpcService;
    const lb = g?.loadBalancer;
    values.pluginServer = {
      enabled: true,
      ...workloadValues(w),
      grpcService: {
        type: lb ? 'LoadBalancer' : 'ClusterIP',
        port: g?.port,
        ...(lb
          ? {
              loadBalancer: {
                provider: lb.provider,
                internal: lb.internal,
                annotations: lb.annotations,
                sourceRanges: lb.loadBalancerSourceRanges,
              },
            }
          : {}),
      },
      ...(w.restTokensSecret ? { restTokensSecret: w.restTokensSecret } : {}),
      ...keySecretValues(w),
      ...artifactVolumes(w),
      ...(w.storageUrl ? { [w.storageUrl.type]: { secretName: w.storageUrl.name, secretKey: w.storageUrl.key } } : {}),
    };
  }
  if (w && p.kind === 'agent' && p.agent) {
    values.agent = {
      enabled: true,
      group: p.agent.name,
      mode: p.agent.mode,
      ...workloadValues(w),
      kubeconfigSecrets: w.kubeconfigMounts.map((m) => m.secret),
      ...(p.secretReader ? { watchedSecrets: p.secretReader.secrets } : {}),
      // The Service on the health port that the overlays' base has (/metrics, as synth's config serves it).
      metricsService: { enabled: true },
    };
  }
  return values;
}

/** The chart's value for each key Secret: the generated value (the chart writes the Secret) or the user's Secret. */
function keySecretValues(w: WorkloadModel): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const k of w.keySecrets ?? []) {
    values[k.role] = {
      enabled: true,
      secretKey: k.key,
      ...(k.value !== undefined ? { value: k.value } : { existingSecret: k.secret }),
    };
  }
  return values;
}

/** The artifact credentials' Secrets through the chart's extra volumes, after rest-tokens as in the overlays. */
function artifactVolumes(w: WorkloadModel): Record<string, unknown> {
  const mounts = w.artifactSecretMounts ?? [];
  if (mounts.length === 0) return {};
  return {
    extraVolumes: mounts.map((m) => ({ name: m.volume, secret: { secretName: m.secret } })),
    extraVolumeMounts: mounts.map((m) => ({ name: m.volume, mountPath: m.mountPath, readOnly: true })),
  };
}

/** What both components' values share: the pods, their scheduling, the config file and TLS. */
function workloadValues(w: WorkloadModel): Record<string, unknown> {
  return {
    instance: w.instanceLabels['app.kubernetes.io/instance'],
    replicas: w.replicas,
    image: w.image,
    resources: RUNTIMES[w.component].resources,
    ...podDisruptionBudget(w),
    ...networkPolicy(w),
    ...podValues(w),
    config: w.config,
    tls: tlsValues(w.tls),
  };
}

function tlsValues(tls: TlsDecision): Record<string, unknown> {
  if (tls.source === 'none') return { source: 'none' };
  if (tls.source === 'cert-manager') {
    return {
      source: 'cert-manager',
      certManager: {
        issuerRef: tls.issuerRef,
        commonName: tls.commonName,
        dnsNames: tls.dnsNames,
        uris: tls.uris,
        duration: `${tls.durationHours}h`,
      },
    };
  }
  return {
    source: 'secret',
    secret: { caCert: tls.caCert, ...(tls.pair ? { cert: tls.pair.cert, key: tls.pair.key } : {}) },
  };
}

function rbacEntry(r: RbacModel): Record<string, unknown> {
  return {
    account: r.account.name,
    roleName: r.roleName,
    serviceAccount: { ...r.subject, create: r.createServiceAccount, tokenSecret: r.createServiceAccount },
    namespaces: r.namespaces,
    rules: r.rules.rules,
    clusterRules: r.rules.clusterRules,
  };
}

function podDisruptionBudget(w: WorkloadModel): Record<string, unknown> {
  return w.maxUnavailable !== undefined
    ? { podDisruptionBudget: { enabled: true, maxUnavailable: w.maxUnavailable } }
    : {};
}

/** The chart's networkPolicy values; its template renders from them the object objects.ts builds. */
function networkPolicy(w: WorkloadModel): Record<string, unknown> {
  const np = w.networkPolicy;
  if (!np) return {};
  const { component: _component, ...peers } = np;
  return { networkPolicy: { enabled: true, ...peers } };
}

/** The topology's pod settings under the chart's conventional names. */
function podValues(w: WorkloadModel): Record<string, unknown> {
  const p = w.pod;
  return {
    ...(p.nodeSelector ? { nodeSelector: p.nodeSelector } : {}),
    ...(p.tolerations ? { tolerations: p.tolerations } : {}),
    ...(p.affinity ? { affinity: p.affinity } : {}),
    ...(p.topologySpreadConstraints ? { topologySpreadConstraints: p.topologySpreadConstraints } : {}),
    ...(p.priorityClassName ? { priorityClassName: p.priorityClassName } : {}),
    ...(p.annotations ? { podAnnotations: p.annotations } : {}),
    ...(p.labels ? { podLabels: p.labels } : {}),
    ...(p.serviceAccountAnnotations ? { serviceAccount: { annotations: p.serviceAccountAnnotations } } : {}),
  };
}
