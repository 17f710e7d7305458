import { createHash } from 'node:crypto';
import { App, Chart } from 'cdk8s';
import {
  accountRbacManifests,
  CertManagerCertificate,
  secretReaderRbacManifests,
  ConfigFile,
  GrpcService,
  KeySecret,
  namespaceManifests,
  serviceAccountManifests,
  TlsSecret,
  type IdentifiedManifest,
  selectorLabels,
  standardLabels,
} from '../../cdk8s/index.js';
import {
  AgentNetworkPolicy,
  DisruptionBudget,
  PluginServerNetworkPolicy,
  Workload,
  scheduling,
  type WorkloadMount,
  type WorkloadProps,
} from '../../cdk8s/index.js';
import { POD_SECURITY_LABELS, type Place, type WorkloadModel } from './model.js';
import { RUNTIMES } from './runtimes.js';
import { PATHS, STORAGE_URL_ENV } from './names.js';
import { toYaml, type Obj } from './serialize.js';

/** The Kubernetes objects of a place, projected from its model through the cdk8s constructs. */

/** One App per chart: a Chart's toJson() resolves across its whole App, so a shared App makes synth quadratic. */
function chartObjects(id: string, build: (c: Chart) => void): Obj[] {
  const chart = new Chart(new App({ outdir: '/nonexistent' }), id, { disableResourceNameHashes: true });
  build(chart);
  return chart.toJson() as Obj[];
}

/**
 * Objects outside the workload kustomization, final as written (namespaces, ServiceAccounts, RBAC). One place per
 * account has them, so they are the constructs' manifests taken as data, without a cdk8s App: its synthesis of a
 * thousand small charts was most of synth's time.
 */
export function outerObjects(p: Place): Obj[] {
  const out: IdentifiedManifest[] = [];
  if (p.ownNamespace) {
    // Several places may emit one namespace (accounts' RBAC and agent groups in the same one): the same labels
    // from each, without a component, or applies of different places (server-side, or a GitOps tool per place)
    // would fight over the value.
    const { 'app.kubernetes.io/component': _, ...shared } = standardLabels('namespace');
    out.push(...namespaceManifests({ name: p.ownNamespace, labels: { ...shared, ...POD_SECURITY_LABELS } }));
  }
  const reader = p.secretReader;
  if (reader && p.agent) out.push(...secretReaderRbacManifests({ ...reader, instance: p.agent.name }));
  const r = p.rbac;
  if (r) {
    if (r.createServiceAccount) {
      out.push(
        ...serviceAccountManifests({
          name: r.subject.name,
          namespace: r.subject.namespace,
          labels: standardLabels('rbac', {
            'app.kubernetes.io/instance': r.account.name,
            'scale-agent.io/account': r.account.name,
          }),
          tokenSecret: true,
        }),
      );
    }
    out.push(
      ...accountRbacManifests({
        account: r.account.name,
        roleName: r.roleName,
        subject: r.subject,
        namespaces: r.namespaces,
        rules: r.rules.rules,
        clusterRules: r.rules.clusterRules,
      }),
    );
  }
  return out.map(([, m]) => m);
}

/** Base names (as the overlay writes them, before Kustomize's name suffix) or final names (as manifests show). */
export type Naming = 'base' | 'final';

const named = (w: WorkloadModel, naming: Naming) => (base: string) =>
  naming === 'final' ? `${base}${w.nameSuffix}` : base;

/** Labels of a workload's objects; with final naming they include the instance label Kustomize's overlay adds. */
function labelsOf(
  w: WorkloadModel,
  naming: Naming,
): { labels: Record<string, string>; selector: Record<string, string> } {
  const extra = naming === 'final' ? w.instanceLabels : {};
  return {
    labels: { ...standardLabels(w.component), ...extra },
    selector: { ...selectorLabels(w.component), ...extra },
  };
}

/**
 * The pod's volumes in the model's order: config, TLS (unless insecure), REST tokens, the plugin-server's key
 * Secrets, artifact and kubeconfig Secrets.
 */
export function podMounts(w: WorkloadModel, naming: Naming): WorkloadMount[] {
  const n = named(w, naming);
  const mounts: WorkloadMount[] = [{ volume: 'config', mountPath: PATHS.configDir, configMap: n(w.configName) }];
  if (w.tls.source === 'secret') mounts.push({ volume: 'tls', mountPath: PATHS.tlsDir, secret: n(w.tls.secretName) });
  if (w.tls.source === 'cert-manager') {
    mounts.push({ volume: 'tls', mountPath: PATHS.tlsDir, secret: w.tls.finalSecretName });
  }
  if (w.restTokensSecret) {
    mounts.push({ volume: 'rest-tokens', mountPath: PATHS.restTokensDir, secret: w.restTokensSecret });
  }
  // A generated Secret is the overlay's (named like the workload's other objects); the user's is outside it.
  for (const k of w.keySecrets ?? [])
    mounts.push({ volume: k.volume, mountPath: k.mountPath, secret: k.generated ? n(k.secret) : k.secret });
  for (const m of w.artifactSecretMounts ?? [])
    mounts.push({ volume: m.volume, mountPath: m.mountPath, secret: m.secret });
  for (const m of w.kubeconfigMounts) mounts.push({ volume: m.volume, mountPath: m.mountPath, secret: m.secret });
  return mounts;
}

function podEnv(w: WorkloadModel): Obj[] {
  // The store's URL Secret is the user's, outside the overlay, so Kustomize leaves its name alone.
  const url = w.storageUrl;
  const env: Obj[] = url
    ? [{ name: STORAGE_URL_ENV[url.type], valueFrom: { secretKeyRef: { name: url.name, key: url.key } } }]
    : [];
  return [
    ...env,
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    ...(RUNTIMES[w.component].env ?? []),
  ];
}

export function workloadProps(w: WorkloadModel, naming: Naming): WorkloadProps {
  const rt = RUNTIMES[w.component];
  return {
    component: w.component,
    name: named(w, naming)(w.name),
    ...labelsOf(w, naming),
    replicas: w.replicas,
    image: w.image,
    args: rt.args,
    env: podEnv(w),
    ports: rt.ports,
    readinessProbe: rt.readinessProbe,
    livenessProbe: rt.livenessProbe,
    resources: rt.resources,
    mounts: podMounts(w, naming),
    automountServiceAccountToken: w.automountServiceAccountToken,
    pod: w.pod,
    ...(rt.httpService ? { httpService: { ...rt.httpService, name: named(w, naming)(rt.httpService.name) } } : {}),
  };
}

/** Objects the overlay adds to the base: config, TLS, the gRPC Service, the PDB and the NetworkPolicy. */
export function generatedObjects(p: Place, naming: Naming = 'base'): Obj[] {
  const w = p.workload;
  if (!w) return [];
  return chartObjects(p.name, (c) => addGenerated(c, p, w, naming));
}

function addGenerated(c: Chart, p: Place, w: WorkloadModel, naming: Naming): void {
  const n = named(w, naming);
  const { labels, selector } = labelsOf(w, naming);
  new ConfigFile(c, 'config', { name: n(w.configName), labels, content: toYaml(w.config) });
  const tls = w.tls;
  if (tls.source === 'secret') {
    new TlsSecret(c, 'tls', {
      name: n(tls.secretName),
      labels,
      caCert: tls.caCert,
      ...(tls.pair ? { cert: tls.pair.cert, key: tls.pair.key } : {}),
    });
  } else if (tls.source === 'cert-manager') {
    new CertManagerCertificate(c, 'tls', {
      name: n(tls.certificateName),
      labels,
      secretName: tls.finalSecretName,
      issuerRef: tls.issuerRef,
      usage: tls.usage,
      commonName: tls.commonName,
      dnsNames: tls.dnsNames,
      uris: tls.uris,
      durationHours: tls.durationHours,
    });
  }
  for (const k of w.keySecrets ?? []) {
    if (k.value !== undefined) new KeySecret(c, k.volume, { name: n(k.secret), labels, key: k.key, value: k.value });
  }
  if (w.maxUnavailable !== undefined) {
    new DisruptionBudget(c, 'pdb', { name: n(w.name), labels, selector, maxUnavailable: w.maxUnavailable });
  }
  const np = w.networkPolicy;
  if (np?.component === 'plugin-server') {
    new PluginServerNetworkPolicy(c, 'network-policy', { name: n(w.name), labels, selector, ...np });
  } else if (np?.component === 'agent') {
    new AgentNetworkPolicy(c, 'network-policy', { name: n(w.name), labels, selector, ...np });
  }
  const g = p.grpcService;
  if (g) {
    const lb = g.loadBalancer;
    new GrpcService(c, 'grpc', {
      name: n(g.name),
      labels,
      selector,
      port: g.port,
      ...(lb
        ? {
            loadBalancer: {
              provider: lb.provider,
              internal: lb.internal,
              sourceRanges: lb.loadBalancerSourceRanges,
              annotations: lb.annotations,
            },
          }
        : {}),
    });
  }
}

/** The workload of a place as it runs: the same constructs as the base and overlay, with final names. */
export function workloadObjects(p: Place): Obj[] {
  const w = p.workload;
  if (!w) return [];
  const chart = new Chart(new App({ outdir: '/nonexistent' }), p.name, {
    disableResourceNameHashes: true,
    namespace: w.namespace,
  });
  const props = workloadProps(w, 'final');
  new Workload(chart, 'workload', { ...props, pod: { ...props.pod, annotations: podAnnotations(w) } });
  addGenerated(chart, p, w, 'final');
  return chart.toJson() as Obj[];
}

/**
 * A place's pod annotations: the topology's, plus the checksum of the config file, so that applying a changed
 * config rolls the pods (the plugin-server reads authorization and storage at start), as the chart's
 * checksum/config does for `helm upgrade`.
 */
function podAnnotations(w: WorkloadModel): Record<string, string> {
  return { 'checksum/config': createHash('sha256').update(toYaml(w.config)).digest('hex'), ...w.pod.annotations };
}

/**
 * The strategic-merge patch the overlay applies to the base Deployment. Every list it touches is written out in
 * full, in the model's order, so Kustomize's merge (patch elements first, then the base's unmentioned ones) gives
 * exactly the model's lists; the image is pinned by the kustomization's `images:`, not here.
 */
export function deploymentPatch(w: WorkloadModel): Obj {
  const props = workloadProps(w, 'base');
  const mounts = props.mounts.map((m) => ({ name: m.volume, mountPath: m.mountPath, readOnly: true }));
  const volumes: Obj[] = props.mounts.map((m) =>
    m.configMap
      ? { name: m.volume, configMap: { name: m.configMap } }
      : { name: m.volume, secret: { secretName: m.secret } },
  );
  const container: Obj = { name: w.component, env: props.env, volumeMounts: mounts };
  if (w.tls.source === 'none') {
    // The base mounts TLS; an insecure place removes it.
    volumes.push({ name: 'tls', $patch: 'delete' });
    (container.volumeMounts as Obj[]).push({ mountPath: PATHS.tlsDir, $patch: 'delete' });
  }
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: w.name },
    spec: {
      replicas: w.replicas,
      template: {
        metadata: { ...(w.pod.labels ? { labels: w.pod.labels } : {}), annotations: podAnnotations(w) },
        spec: {
          ...scheduling(w.pod),
          automountServiceAccountToken: w.automountServiceAccountToken,
          containers: [container],
          volumes,
        },
      },
    },
  };
}

/** The overlay's patch of the base ServiceAccount, when the topology annotates it (workload identity). */
export function serviceAccountPatch(w: WorkloadModel): Obj | undefined {
  if (!w.pod.serviceAccountAnnotations) return undefined;
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name: w.name, annotations: w.pod.serviceAccountAnnotations },
  };
}
