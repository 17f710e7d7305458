import { ensureCertSet, type CertSet } from '../shared/certs/index.js';
import { NAMES, agentIdentityUri, grpcServiceDnsNames } from './names.js';
import type { TlsMaterial } from './model.js';
import type { Topology } from './topology.js';

/** The DNS names the server certificate must carry: the gRPC Service's cluster names and any external address. */
export function serverDnsNames(t: Topology): string[] {
  const e = t.pluginServer.exposure;
  const extra =
    e.type === 'LoadBalancer' && e.address
      ? [e.address]
      : e.type === 'External'
        ? [e.address.slice(0, e.address.lastIndexOf(':'))]
        : [];
  return [...new Set([...grpcServiceDnsNames(t.pluginServer.namespace), ...extra])];
}

/**
 * Loads or creates the topology's certificates in `dir` (reusing whatever still fits), or returns undefined when
 * the topology needs none (insecure, or cert-manager issues them in the cluster).
 */
export async function ensureTopologyCerts(
  t: Topology,
  dir: string,
  now?: Date,
): Promise<{ material: TlsMaterial; set: CertSet } | undefined> {
  const { mode, certificates } = t.pluginServer.tls;
  if (mode === 'insecure' || certificates.source !== 'generate') return undefined;
  const set = await ensureCertSet(dir, {
    caCommonName: `scale-agent ${t.name} CA`,
    server: { commonName: NAMES.pluginServerGrpc, dnsNames: serverDnsNames(t) },
    clients:
      mode === 'mtls'
        ? t.agents.map((a) => ({
            name: a.name,
            commonName: `${t.name}/${a.name}`,
            uris: [agentIdentityUri(t.name, a.name)],
          }))
        : [],
    validityDays: certificates.validityDays,
    ...(now ? { now } : {}),
  });
  return { material: { caCert: set.ca.cert, server: set.server, clients: set.clients }, set };
}
