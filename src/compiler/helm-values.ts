import { NAMES, accountRoleName, accountServiceAccount, agentIdentityUri, grpcServiceDnsNames } from './names.js';
import { accountRules } from './rbac-rules.js';
import { agentConfig, kubeconfigMounts, pluginServerConfig } from './runtime-config.js';
import type { Place, TlsMaterial } from './synth.js';
import type { Account, Topology } from './topology.js';

/** Values for charts/scale-agent that install one place; the chart's values.schema.json describes them. */
export function helmValues(t: Topology, p: Place, tls: TlsMaterial | undefined): Record<string, unknown> {
  const ps = t.pluginServer;
  const certs = ps.tls.certificates;
  const mode = ps.tls.mode;
  const values: Record<string, unknown> = {
    pluginServer: { enabled: false },
    agent: { enabled: false },
    rbac: { accounts: [] as unknown[] },
  };
  const tlsValues = (
    usage: 'server' | 'client',
    pair: { cert: string; key: string } | undefined,
    names: { commonName: string; dnsNames?: string[]; uris?: string[] },
  ): Record<string, unknown> => {
    if (mode === 'insecure') return { source: 'none' };
    if (certs.source === 'cert-manager') {
      return {
        source: 'cert-manager',
        certManager: {
          issuerRef: certs.issuerRef,
          commonName: names.commonName,
          dnsNames: names.dnsNames ?? [],
          uris: names.uris ?? [],
          duration: '2160h',
        },
      };
    }
    return {
      source: 'secret',
      secret: {
        caCert: tls?.caCert ?? '',
        ...(pair && (usage === 'server' || mode === 'mtls') ? { cert: pair.cert, key: pair.key } : {}),
      },
    };
  };

  if (p.kind === 'plugin-server') {
    const e = ps.exposure;
    const extra =
      e.type === 'LoadBalancer' && e.address
        ? [e.address]
        : e.type === 'External'
          ? [e.address.slice(0, e.address.lastIndexOf(':'))]
          : [];
    values.pluginServer = {
      enabled: true,
      instance: t.name,
      replicas: ps.replicas,
      image: ps.image,
      config: pluginServerConfig(t),
      grpcService: {
        type: e.type === 'LoadBalancer' ? 'LoadBalancer' : 'ClusterIP',
        port: ps.grpcPort,
        ...(e.type === 'LoadBalancer'
          ? {
              loadBalancer: {
                provider: e.provider,
                internal: e.internal,
                annotations: e.annotations,
                sourceRanges: e.loadBalancerSourceRanges,
              },
            }
          : {}),
      },
      ...(ps.storage.type === 'mysql'
        ? { mysql: { secretName: ps.storage.secretRef.name, secretKey: ps.storage.secretRef.key } }
        : {}),
      tls: tlsValues('server', tls?.server, {
        commonName: NAMES.pluginServerGrpc,
        dnsNames: [...grpcServiceDnsNames(ps.namespace), ...extra],
      }),
    };
  }
  if (p.kind === 'agent') {
    const agent = t.agents.find((a) => p.name === `agent-${a.name}`);
    if (agent) {
      values.agent = {
        enabled: true,
        group: agent.name,
        mode: agent.mode,
        replicas: agent.replicas,
        image: agent.image,
        config: agentConfig(t, agent),
        kubeconfigSecrets: kubeconfigMounts(agent).map((m) => m.secret),
        tls: tlsValues('client', tls?.clients[agent.name], {
          commonName: `${t.name}/${agent.name}`,
          uris: [agentIdentityUri(t.name, agent.name)],
        }),
      };
      const acc = agent.accounts[0] as Account;
      if (agent.mode === 'agent' && acc.rbac.create) {
        values.rbac = {
          accounts: [
            rbacEntry(acc, { name: `${NAMES.agent}-${agent.name}`, namespace: agent.namespace, create: false }),
          ],
        };
      }
    }
  }
  if (p.kind === 'account-rbac') {
    const acc = t.agents.flatMap((a) => a.accounts).find((a) => p.name === `account-${a.name}`);
    if (acc) {
      values.rbac = {
        accounts: [
          rbacEntry(acc, {
            name: accountServiceAccount(acc.name),
            namespace: acc.rbac.serviceAccountNamespace,
            create: true,
          }),
        ],
      };
    }
  }
  return values;
}

function rbacEntry(acc: Account, sa: { name: string; namespace: string; create: boolean }): Record<string, unknown> {
  const r = accountRules(acc);
  return {
    account: acc.name,
    roleName: accountRoleName(acc.name),
    serviceAccount: { ...sa, tokenSecret: sa.create },
    namespaces: acc.namespaces,
    rules: r.rules,
    clusterRules: r.clusterRules,
  };
}
