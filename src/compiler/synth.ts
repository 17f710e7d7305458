import { App, Chart } from 'cdk8s';
import {
  AccountRbac,
  CertManagerCertificate,
  ConfigFile,
  GrpcService,
  Namespace,
  ServiceAccount,
  TlsSecret,
  selectorLabels,
  standardLabels,
} from '../../cdk8s/index.js';
import type { PemPair } from '../shared/certs/index.js';
import { ScaleAgentError } from '../shared/errors.js';
import type { BaseBundle, BaseComponent } from './base.js';
import { helmValues } from './helm-values.js';
import { applyWorkloadTransform } from './kustomize-emulation.js';
import {
  MYSQL_URL_ENV,
  NAMES,
  PATHS,
  accountRoleName,
  accountServiceAccount,
  agentIdentityUri,
  agentSuffix,
  grpcServiceDnsNames,
  placeNames,
} from './names.js';
import { accountRules } from './rbac-rules.js';
import { agentConfig, kubeconfigMounts, pluginServerConfig, serverAddress } from './runtime-config.js';
import { sortForApply, toJsonText, toYaml, toYamlDocuments, type Obj } from './serialize.js';
import type { Account, Agent, Topology } from './topology.js';

/** Generated TLS material: the CA certificate (its key never enters the output), server and client pairs. */
export interface TlsMaterial {
  caCert: string;
  server: PemPair;
  clients: Record<string, PemPair>;
}

export interface SynthOptions {
  base: BaseBundle;
  /** Required when certificates.source is generate and tls.mode is not insecure. */
  tls?: TlsMaterial;
  /** Directories between kustomize/overlays/ and each place (1 for the repo's per-example overlays). @default 0 */
  overlayDepth?: number;
  /** Version stamped into summary.json. */
  version: string;
}

export type PlaceKind = 'plugin-server' | 'agent' | 'account-rbac';

/** One place to apply something: a cluster (and namespace) with its own overlay, values file and manifests. */
export interface Place {
  name: string;
  kind: PlaceKind;
  order: number;
  cluster: string;
  namespace: string;
  mode?: Agent['mode'];
  /** Objects outside the workload kustomization, final as written (namespaces, RBAC). */
  outer: Obj[];
  workload?: {
    component: BaseComponent;
    namespace: string;
    nameSuffix: string;
    labels: Record<string, string>;
    /** Objects added to the base, with base (unsuffixed) names, as written into the overlay. */
    generated: Obj[];
    patch: Obj;
  };
  /** What must exist before applying (user-provided Secrets). */
  requires: string[];
}

export interface SynthSummary {
  topology: string;
  generator: string;
  tls: { mode: string; source: string };
  places: {
    name: string;
    order: number;
    kind: PlaceKind;
    mode?: string;
    cluster: string;
    namespace: string;
    kustomize: string;
    helm: string;
    manifests: string;
    objects: { kind: string; namespace?: string; name: string }[];
    requires: string[];
    apply: string[];
  }[];
  accounts: { name: string; agent: string; mode: string; access: string; scope: string; rbacPlace?: string }[];
}

export interface SynthResult {
  /** Output files by path relative to the output directory. */
  files: Map<string, string>;
  summary: SynthSummary;
  places: Place[];
}

/** Pure: the same topology, base and TLS material always give byte-identical files. */
export function synthesize(t: Topology, options: SynthOptions): SynthResult {
  const tlsMode = t.pluginServer.tls.mode;
  const generate = t.pluginServer.tls.certificates.source === 'generate' && tlsMode !== 'insecure';
  if (generate && !options.tls) {
    throw new ScaleAgentError(
      'INTERNAL',
      'synthesize: generated TLS material is required for certificates.source generate',
    );
  }
  const places = [pluginServerPlace(t, options.tls), ...t.agents.map((a) => agentPlace(t, a, options.tls))];
  for (const agent of t.agents) {
    for (const acc of agent.accounts) {
      if (!acc.serviceAccount && acc.rbac.create) places.push(accountPlace(agent, acc));
    }
  }
  places.sort((a, b) => a.order - b.order || (a.name < b.name ? -1 : 1));

  const files = new Map<string, string>();
  for (const [path, content] of Object.entries(options.base.files)) files.set(`kustomize/base/${path}`, content);
  const depth = options.overlayDepth ?? 0;
  const renderedByPlace = new Map<string, Obj[]>();
  for (const p of places) {
    const rendered = renderPlace(p, options.base);
    renderedByPlace.set(p.name, rendered);
    files.set(`manifests/${p.name}.yaml`, header(p) + toYamlDocuments(rendered));
    for (const [path, content] of overlayFiles(p, depth)) files.set(`kustomize/overlays/${p.name}/${path}`, content);
    files.set(`helm/${p.name}.values.yaml`, helmHeader(p) + toYaml(helmValues(t, p, options.tls)));
  }
  const summary = summarize(t, places, renderedByPlace, options);
  files.set('summary.json', toJsonText(summary));
  return { files: new Map([...files.entries()].sort(([a], [b]) => (a < b ? -1 : 1))), summary, places };
}

/** The objects of one place, exactly as `kustomize build` of its overlay gives them. */
export function renderPlace(p: Place, base: BaseBundle): Obj[] {
  const objs = [...p.outer];
  if (p.workload) {
    const w = p.workload;
    objs.push(
      ...applyWorkloadTransform([...base.resources[w.component], ...w.generated], {
        namespace: w.namespace,
        nameSuffix: w.nameSuffix,
        labels: w.labels,
        patches: [w.patch],
      }),
    );
  }
  return sortForApply(objs);
}

/** One App per chart: a Chart's toJson() resolves across its whole App, so a shared App makes synth quadratic. */
function chartObjects(id: string, build: (c: Chart) => void): Obj[] {
  const chart = new Chart(new App({ outdir: '/nonexistent' }), id, { disableResourceNameHashes: true });
  build(chart);
  return chart.toJson() as Obj[];
}

function pluginServerPlace(t: Topology, tls: TlsMaterial | undefined): Place {
  const ps = t.pluginServer;
  const labels = standardLabels('plugin-server');
  const mode = ps.tls.mode;
  const certs = ps.tls.certificates;
  const e = ps.exposure;
  const extraSans =
    e.type === 'LoadBalancer' && e.address ? [e.address] : e.type === 'External' ? [hostOf(e.address)] : [];
  const generated = chartObjects('plugin-server', (c) => {
    new ConfigFile(c, 'config', { name: NAMES.pluginServerConfig, labels, content: toYaml(pluginServerConfig(t)) });
    if (mode !== 'insecure') {
      if (certs.source === 'generate' && tls) {
        new TlsSecret(c, 'tls', {
          name: NAMES.pluginServerTls,
          labels,
          caCert: tls.caCert,
          cert: tls.server.cert,
          key: tls.server.key,
        });
      } else if (certs.source === 'cert-manager') {
        new CertManagerCertificate(c, 'tls', {
          name: NAMES.pluginServer,
          labels,
          secretName: NAMES.pluginServerTls,
          issuerRef: certs.issuerRef,
          usage: 'server',
          commonName: NAMES.pluginServerGrpc,
          dnsNames: [...grpcServiceDnsNames(ps.namespace), ...extraSans],
          durationHours: 2160,
        });
      }
    }
    new GrpcService(c, 'grpc', {
      name: NAMES.pluginServerGrpc,
      labels,
      selector: selectorLabels('plugin-server'),
      port: ps.grpcPort,
      ...(e.type === 'LoadBalancer'
        ? {
            loadBalancer: {
              provider: e.provider,
              internal: e.internal,
              sourceRanges: e.loadBalancerSourceRanges,
              annotations: e.annotations,
            },
          }
        : {}),
    });
  });
  const container: Obj = { name: 'plugin-server', image: ps.image };
  if (ps.storage.type === 'mysql') {
    container.env = [
      {
        name: MYSQL_URL_ENV,
        valueFrom: { secretKeyRef: { name: ps.storage.secretRef.name, key: ps.storage.secretRef.key } },
      },
    ];
  }
  const podSpec: Obj = { containers: [container] };
  if (mode === 'insecure') dropTls(podSpec, container);
  return {
    name: placeNames.pluginServer,
    kind: 'plugin-server',
    order: 10,
    cluster: "the plugin-server's cluster",
    namespace: ps.namespace,
    outer: [],
    workload: {
      component: 'plugin-server',
      namespace: ps.namespace,
      nameSuffix: '',
      labels: { 'app.kubernetes.io/instance': t.name },
      generated,
      patch: deploymentPatch(NAMES.pluginServer, ps.replicas, podSpec),
    },
    requires:
      ps.storage.type === 'mysql'
        ? [
            `Secret ${ps.storage.secretRef.name} (key ${ps.storage.secretRef.key}: mysql:// URL) in namespace ${ps.namespace}`,
          ]
        : [],
  };
}

function agentPlace(t: Topology, agent: Agent, tls: TlsMaterial | undefined): Place {
  const labels = standardLabels('agent');
  const suffix = agentSuffix(agent.name);
  const mode = t.pluginServer.tls.mode;
  const certs = t.pluginServer.tls.certificates;
  const finalTls = `${NAMES.agentTls}${suffix}`;
  const generated = chartObjects(`agent-${agent.name}`, (c) => {
    new ConfigFile(c, 'config', { name: NAMES.agentConfig, labels, content: toYaml(agentConfig(t, agent)) });
    if (mode !== 'insecure') {
      if (certs.source === 'generate' && tls) {
        const client = mode === 'mtls' ? tls.clients[agent.name] : undefined;
        new TlsSecret(c, 'tls', {
          name: NAMES.agentTls,
          labels,
          caCert: tls.caCert,
          ...(client ? { cert: client.cert, key: client.key } : {}),
        });
      } else if (certs.source === 'cert-manager') {
        new CertManagerCertificate(c, 'tls', {
          name: NAMES.agent,
          labels,
          // cert-manager's secretName is no Kustomize name reference, so it is written in its final form.
          secretName: finalTls,
          issuerRef: certs.issuerRef,
          usage: 'client',
          commonName: `${t.name}/${agent.name}`,
          uris: [agentIdentityUri(t.name, agent.name)],
          durationHours: 2160,
        });
      }
    }
  });
  const mounts = kubeconfigMounts(agent);
  const container: Obj = { name: 'agent', image: agent.image };
  const podSpec: Obj = { containers: [container] };
  if (mounts.length > 0) {
    container.volumeMounts = mounts.map((m) => ({ name: m.volume, mountPath: m.mountPath, readOnly: true }));
    podSpec.volumes = mounts.map((m) => ({ name: m.volume, secret: { secretName: m.secret } }));
  }
  if (agent.mode === 'agent') podSpec.automountServiceAccountToken = true;
  if (mode === 'insecure') dropTls(podSpec, container);
  else if (certs.source === 'cert-manager') {
    podSpec.volumes = [...((podSpec.volumes as Obj[]) ?? []), { name: 'tls', secret: { secretName: finalTls } }];
  }

  const remote = agent.mode !== 'service';
  const outer = chartObjects(`agent-${agent.name}-outer`, (c) => {
    if (remote) new Namespace(c, 'ns', { name: agent.namespace, labels: standardLabels('agent') });
    if (agent.mode === 'agent') {
      const acc = agent.accounts[0] as Account;
      if (acc.rbac.create) {
        const r = accountRules(acc);
        new AccountRbac(c, 'rbac', {
          account: acc.name,
          roleName: accountRoleName(acc.name),
          subject: { name: `${NAMES.agent}${suffix}`, namespace: agent.namespace },
          namespaces: acc.namespaces,
          rules: r.rules,
          clusterRules: r.clusterRules,
        });
      }
    }
  });
  const secrets = new Map<string, string[]>();
  for (const a of agent.accounts) {
    if (a.kubeconfigSecret)
      secrets.set(a.kubeconfigSecret.name, [...(secrets.get(a.kubeconfigSecret.name) ?? []), a.kubeconfigSecret.key]);
  }
  return {
    name: placeNames.agent(agent.name),
    kind: 'agent',
    order: agent.mode === 'service' ? 20 : agent.mode === 'infrastructure' ? 30 : 40,
    cluster:
      agent.mode === 'service'
        ? "the plugin-server's cluster"
        : agent.mode === 'agent'
          ? `the cluster of account ${agent.accounts[0]?.name}`
          : `the cluster that runs agent group ${agent.name}`,
    namespace: agent.namespace,
    mode: agent.mode,
    outer,
    workload: {
      component: 'agent',
      namespace: agent.namespace,
      nameSuffix: suffix,
      labels: { 'app.kubernetes.io/instance': agent.name },
      generated,
      patch: deploymentPatch(NAMES.agent, agent.replicas, podSpec),
    },
    requires: [...secrets.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(
        ([name, keys]) =>
          `Secret ${name} (keys ${[...new Set(keys)].sort().join(', ')}: kubeconfigs) in namespace ${agent.namespace}`,
      ),
  };
}

function accountPlace(agent: Agent, acc: Account): Place {
  const ns = acc.rbac.serviceAccountNamespace;
  const sa = accountServiceAccount(acc.name);
  const labels = standardLabels('rbac', { 'scale-agent.io/account': acc.name });
  const outer = chartObjects(`account-${acc.name}`, (c) => {
    new Namespace(c, 'ns', { name: ns, labels: standardLabels('rbac') });
    new ServiceAccount(c, 'sa', { name: sa, namespace: ns, labels, tokenSecret: true });
    const r = accountRules(acc);
    new AccountRbac(c, 'rbac', {
      account: acc.name,
      roleName: accountRoleName(acc.name),
      subject: { name: sa, namespace: ns },
      namespaces: acc.namespaces,
      rules: r.rules,
      clusterRules: r.clusterRules,
    });
  });
  return {
    name: placeNames.account(acc.name),
    kind: 'account-rbac',
    order: 5,
    cluster: `the cluster of account ${acc.name} (agent group ${agent.name})`,
    namespace: ns,
    mode: agent.mode,
    outer,
    requires: [],
  };
}

function deploymentPatch(name: string, replicas: number, podSpec: Obj): Obj {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: { replicas, template: { spec: podSpec } },
  };
}

function dropTls(podSpec: Obj, container: Obj): void {
  podSpec.volumes = [...((podSpec.volumes as Obj[]) ?? []), { name: 'tls', $patch: 'delete' }];
  container.volumeMounts = [
    ...((container.volumeMounts as Obj[]) ?? []),
    { mountPath: PATHS.tlsDir, $patch: 'delete' },
  ];
}

function hostOf(address: string): string {
  return address.slice(0, address.lastIndexOf(':'));
}

function header(p: Place): string {
  return (
    `# Generated by scale-agent synth; DO NOT EDIT.\n# Place ${p.name}: apply to ${p.cluster}` +
    `${p.namespace ? ` (namespace ${p.namespace})` : ''}.\n`
  );
}

function helmHeader(p: Place): string {
  return `# Generated by scale-agent synth; DO NOT EDIT. Values for charts/scale-agent, place ${p.name} (${p.cluster}).\n`;
}

function overlayFiles(p: Place, depth: number): [string, string][] {
  const up = (n: number): string => '../'.repeat(n);
  const out: [string, string][] = [];
  const resources: string[] = [];
  const outerByFile = new Map<string, Obj[]>();
  for (const o of p.outer) {
    const f =
      o.kind === 'Namespace'
        ? 'namespace.yaml'
        : o.kind === 'ServiceAccount' || o.kind === 'Secret'
          ? 'serviceaccount.yaml'
          : 'rbac.yaml';
    outerByFile.set(f, [...(outerByFile.get(f) ?? []), o]);
  }
  for (const f of ['namespace.yaml', 'serviceaccount.yaml', 'rbac.yaml']) {
    const objs = outerByFile.get(f);
    if (!objs) continue;
    resources.push(f);
    out.push([f, toYamlDocuments(sortForApply(objs))]);
  }
  if (p.workload) {
    const w = p.workload;
    resources.push('workload');
    const wres = [`${up(depth + 3)}base/${w.component}`];
    const byFile = new Map<string, Obj[]>();
    for (const o of w.generated) {
      const f =
        o.kind === 'ConfigMap'
          ? 'config.yaml'
          : o.kind === 'Service'
            ? 'grpc-service.yaml'
            : o.kind === 'Certificate'
              ? 'certificate.yaml'
              : 'tls-secret.yaml';
      byFile.set(f, [...(byFile.get(f) ?? []), o]);
    }
    for (const f of [...byFile.keys()].sort()) {
      wres.push(f);
      out.push([`workload/${f}`, toYamlDocuments(byFile.get(f) as Obj[])]);
    }
    out.push(['workload/deployment-patch.yaml', toYaml(w.patch)]);
    const k: Obj = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      namespace: w.namespace,
      ...(w.nameSuffix ? { nameSuffix: w.nameSuffix } : {}),
      labels: [{ pairs: w.labels, includeSelectors: true }],
      resources: wres,
      patches: [{ path: 'deployment-patch.yaml' }],
    };
    out.push([
      'workload/kustomization.yaml',
      `# Generated by scale-agent synth; DO NOT EDIT. The ${w.component} workload of place ${p.name}, over the base.\n` +
        kustomizationYaml(k),
    ]);
  }
  const top: Obj = { apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources };
  out.push(['kustomization.yaml', header(p) + kustomizationYaml(top)]);
  return out.sort(([a], [b]) => (a < b ? -1 : 1));
}

/** Kustomizations read best in Kustomize's own key order, not alphabetical. */
function kustomizationYaml(k: Obj): string {
  const order = ['apiVersion', 'kind', 'namespace', 'nameSuffix', 'labels', 'resources', 'patches'];
  const sorted: Obj = {};
  for (const key of order) if (k[key] !== undefined) sorted[key] = k[key];
  return toYamlPreserving(sorted);
}

function toYamlPreserving(o: Obj): string {
  // toYaml would re-sort the keys; these documents are small and hand-ordered.
  return Object.entries(o)
    .map(([key, v]) => {
      const doc = toYaml({ [key]: v });
      return doc;
    })
    .join('');
}

function summarize(t: Topology, places: Place[], rendered: Map<string, Obj[]>, options: SynthOptions): SynthSummary {
  const accountPlaces = new Map(places.filter((p) => p.kind === 'account-rbac').map((p) => [p.name, p]));
  return {
    topology: t.name,
    generator: `scale-agent ${options.version}`,
    tls: { mode: t.pluginServer.tls.mode, source: t.pluginServer.tls.certificates.source },
    places: places.map((p) => {
      const objects = (rendered.get(p.name) ?? []).map((o) => {
        const m = o.metadata as Obj;
        return {
          kind: String(o.kind),
          ...(m.namespace !== undefined ? { namespace: String(m.namespace) } : {}),
          name: String(m.name),
        };
      });
      return {
        name: p.name,
        order: p.order,
        kind: p.kind,
        ...(p.mode ? { mode: p.mode } : {}),
        cluster: p.cluster,
        namespace: p.namespace,
        kustomize: `kustomize/overlays/${p.name}`,
        helm: `helm/${p.name}.values.yaml`,
        manifests: `manifests/${p.name}.yaml`,
        objects,
        requires: p.requires,
        apply: [
          `kubectl apply -k kustomize/overlays/${p.name}`,
          `helm upgrade --install ${helmRelease(t, p)} charts/scale-agent --namespace ${p.namespace} --create-namespace -f helm/${p.name}.values.yaml`,
        ],
      };
    }),
    accounts: t.agents.flatMap((a) =>
      a.accounts.map((acc) => {
        const rbacPlace = placeNames.account(acc.name);
        return {
          name: acc.name,
          agent: a.name,
          mode: a.mode,
          access: acc.access,
          scope: acc.namespaces.length > 0 ? `namespaces ${acc.namespaces.join(', ')}` : 'cluster',
          ...(accountPlaces.has(rbacPlace)
            ? { rbacPlace }
            : a.mode === 'agent'
              ? { rbacPlace: placeNames.agent(a.name) }
              : {}),
        };
      }),
    ),
  };
}

export function helmRelease(t: Topology, p: Place): string {
  return p.kind === 'plugin-server' ? `scale-agent-${t.name}` : `scale-agent-${p.name}`;
}

export { serverAddress };
