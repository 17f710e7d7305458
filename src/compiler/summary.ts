import type { Place, PlaceKind } from './model.js';
import { CONTAINER_HTTP_PORT, NAMES } from './names.js';
import type { Obj } from './serialize.js';
import { spinnakerSnippet } from './spinnaker-snippet.js';
import type { Topology } from './topology.js';

export interface SynthSummary {
  topology: string;
  generator: string;
  tls: { mode: string; source: string };
  places: {
    name: string;
    order: number;
    orderReason: string;
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
  /** What to configure on Spinnaker's side to reach the REST API. */
  spinnaker: string[];
}

/** summary.json: the places in apply order with what each holds, and where each account's RBAC is applied. */
export function summarize(t: Topology, places: Place[], rendered: Map<string, Obj[]>, version: string): SynthSummary {
  const rbacPlaceOf = new Map(places.flatMap((p) => (p.rbac ? [[p.rbac.account.name, p.name] as const] : [])));
  return {
    topology: t.name,
    generator: `scale-agent ${version}`,
    tls: { mode: t.pluginServer.tls.mode, source: t.pluginServer.tls.certificates.source },
    places: places.map((p) => ({
      name: p.name,
      order: p.order,
      orderReason: p.orderReason,
      kind: p.kind,
      ...(p.mode ? { mode: p.mode } : {}),
      cluster: p.cluster,
      namespace: p.namespace,
      kustomize: `kustomize/overlays/${p.name}`,
      helm: `helm/${p.name}.values.yaml`,
      manifests: `manifests/${p.name}.yaml`,
      objects: (rendered.get(p.name) ?? []).map((o) => {
        const m = o.metadata as Obj;
        return {
          kind: String(o.kind),
          ...(m.namespace !== undefined ? { namespace: String(m.namespace) } : {}),
          name: String(m.name),
        };
      }),
      requires: p.requires,
      apply: [
        `kubectl apply -k kustomize/overlays/${p.name}`,
        `helm upgrade --install ${p.release} charts/scale-agent --namespace ${p.namespace} --create-namespace -f helm/${p.name}.values.yaml`,
      ],
    })),
    accounts: t.agents.flatMap((a) =>
      a.accounts.map((acc) => {
        const rbacPlace = rbacPlaceOf.get(acc.name);
        return {
          name: acc.name,
          agent: a.name,
          mode: a.mode,
          access: acc.access,
          scope: acc.namespaces.length > 0 ? `namespaces ${acc.namespaces.join(', ')}` : 'cluster',
          ...(rbacPlace ? { rbacPlace } : {}),
        };
      }),
    ),
    spinnaker: spinnakerSettings(t),
  };
}

function spinnakerSettings(t: Topology): string[] {
  const ps = t.pluginServer;
  const url = `http://${NAMES.pluginServer}.${ps.namespace}.svc:${CONTAINER_HTTP_PORT}`;
  const lines = [
    `Clouddriver-compatible REST API: ${url} (point Spinnaker's services, or Orca's routing, at it)`,
    ...spinnakerSnippet(t, url),
  ];
  const auth = ps.restAuth;
  if (!auth.enabled) {
    lines.push(
      'REST authentication is off (pluginServer.rest.auth.enabled: false): whoever reaches the Service may deploy',
    );
    return lines;
  }
  lines.push(
    auth.trustedNetworks.length > 0
      ? `Spinnaker's services call it without a token from ${auth.trustedNetworks.join(', ')}`
      : "no trusted networks: Spinnaker's services send no token, so list their pods' CIDR in " +
          'pluginServer.rest.auth.trustedNetworks',
    `/armory and /admin (scale-agent status, scripts) need 'Authorization: Bearer <token>' with a token from Secret ` +
      `${auth.tokensSecret.name}, key ${auth.tokensSecret.key}`,
  );
  return lines;
}
