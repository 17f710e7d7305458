import type { Place, PlaceKind } from './model.js';
import type { Obj } from './serialize.js';
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
  };
}
