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
import type { Place, WorkloadModel } from './model.js';
import { MYSQL_URL_ENV, PATHS } from './names.js';
import { toYaml, type Obj } from './serialize.js';

/** The Kubernetes objects of a place, projected from its model through the cdk8s constructs. */

/** One App per chart: a Chart's toJson() resolves across its whole App, so a shared App makes synth quadratic. */
function chartObjects(id: string, build: (c: Chart) => void): Obj[] {
  const chart = new Chart(new App({ outdir: '/nonexistent' }), id, { disableResourceNameHashes: true });
  build(chart);
  return chart.toJson() as Obj[];
}

/** Objects outside the workload kustomization, final as written (namespaces, ServiceAccounts, RBAC). */
export function outerObjects(p: Place): Obj[] {
  return chartObjects(`${p.name}-outer`, (c) => {
    if (p.ownNamespace) {
      const component = p.kind === 'account-rbac' ? 'rbac' : 'agent';
      new Namespace(c, 'ns', { name: p.ownNamespace, labels: standardLabels(component) });
    }
    const r = p.rbac;
    if (!r) return;
    if (r.createServiceAccount) {
      new ServiceAccount(c, 'sa', {
        name: r.subject.name,
        namespace: r.subject.namespace,
        labels: standardLabels('rbac', { 'scale-agent.io/account': r.account.name }),
        tokenSecret: true,
      });
    }
    new AccountRbac(c, 'rbac', {
      account: r.account.name,
      roleName: r.roleName,
      subject: r.subject,
      namespaces: r.namespaces,
      rules: r.rules.rules,
      clusterRules: r.rules.clusterRules,
    });
  });
}

/** Objects the overlay adds to the base, with base (unsuffixed) names: config, TLS, the gRPC Service. */
export function generatedObjects(p: Place): Obj[] {
  const w = p.workload;
  if (!w) return [];
  const labels = standardLabels(w.component);
  return chartObjects(p.name, (c) => {
    new ConfigFile(c, 'config', { name: w.configName, labels, content: toYaml(w.config) });
    const tls = w.tls;
    if (tls.source === 'secret') {
      new TlsSecret(c, 'tls', {
        name: tls.secretName,
        labels,
        caCert: tls.caCert,
        ...(tls.pair ? { cert: tls.pair.cert, key: tls.pair.key } : {}),
      });
    } else if (tls.source === 'cert-manager') {
      new CertManagerCertificate(c, 'tls', {
        name: tls.certificateName,
        labels,
        secretName: tls.finalSecretName,
        issuerRef: tls.issuerRef,
        usage: tls.usage,
        commonName: tls.commonName,
        ...(tls.dnsNames.length > 0 ? { dnsNames: tls.dnsNames } : {}),
        ...(tls.uris.length > 0 ? { uris: tls.uris } : {}),
        durationHours: tls.durationHours,
      });
    }
    const g = p.grpcService;
    if (g) {
      const lb = g.loadBalancer;
      new GrpcService(c, 'grpc', {
        name: g.name,
        labels,
        selector: selectorLabels(w.component),
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
  });
}

/** The strategic-merge patch the overlay applies to the base Deployment. */
export function deploymentPatch(w: WorkloadModel): Obj {
  const container: Obj = { name: w.component, image: w.image };
  const podSpec: Obj = { containers: [container] };
  if (w.mysql) container.env = [{ name: MYSQL_URL_ENV, valueFrom: { secretKeyRef: w.mysql } }];
  if (w.kubeconfigMounts.length > 0) {
    container.volumeMounts = w.kubeconfigMounts.map((m) => ({
      name: m.volume,
      mountPath: m.mountPath,
      readOnly: true,
    }));
    podSpec.volumes = w.kubeconfigMounts.map((m) => ({ name: m.volume, secret: { secretName: m.secret } }));
  }
  if (w.automountServiceAccountToken) podSpec.automountServiceAccountToken = true;
  if (w.tls.source === 'none') {
    podSpec.volumes = [...((podSpec.volumes as Obj[]) ?? []), { name: 'tls', $patch: 'delete' }];
    container.volumeMounts = [
      ...((container.volumeMounts as Obj[]) ?? []),
      { mountPath: PATHS.tlsDir, $patch: 'delete' },
    ];
  } else if (w.tls.source === 'cert-manager') {
    podSpec.volumes = [
      ...((podSpec.volumes as Obj[]) ?? []),
      { name: 'tls', secret: { secretName: w.tls.finalSecretName } },
    ];
  }
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: w.name },
    spec: { replicas: w.replicas, template: { spec: podSpec } },
  };
}
