import { findArtifacts, type KubeObject } from '../../shared/ops/index.js';
import { instanceCounts, instanceModel, instanceViewModel, loadBalancerInstance } from './instance.js';
import type { Related } from './related.js';
import { arr, baseFields, createdTime, labelsOf, obj, type Obj, type Resource } from './resource.js';
import { clusterOf } from './app-index.js';

/**
 * Clouddriver's Kubernetes models (caching/view/model/Kubernetes*.java) and the view models its controllers make of
 * them, as JSON. Field names and derivations: docs/clouddriver-compatibility.md, "Applications and infrastructure".
 */

function images(r: Resource): string[] {
  return findArtifacts(r.manifest as KubeObject).flatMap((a) =>
    a.type === 'docker/image' && a.reference ? [a.reference] : [],
  );
}

function capacity(r: Resource): Obj {
  const replicas = obj(r.manifest.spec)?.replicas;
  return { desired: typeof replicas === 'number' ? replicas : 0, pinned: false };
}

function managerRefs(rel: Related, sg: Resource): Obj[] {
  return rel.managersOf(sg).map((m) => ({ account: m.o.account, location: m.o.namespace, name: m.o.name }));
}

/** KubernetesServerGroup: what `/serverGroups/{account}/{namespace}/{name}` and the cluster routes answer. */
export function serverGroupModel(rel: Related, sg: Resource): Obj {
  const pods = rel.podsOf(sg);
  const buildImages = images(sg);
  return {
    ...baseFields(sg),
    type: 'kubernetes',
    zones: [],
    securityGroups: [],
    launchConfig: {},
    capacity: capacity(sg),
    buildInfo: { images: buildImages },
    instances: pods.map(instanceModel),
    instanceCounts: instanceCounts(pods),
    loadBalancers: rel.loadBalancerNames(sg),
    disabled: rel.disabled(sg),
    serverGroupManagers: managerRefs(rel, sg),
    imagesSummary: { summaries: [{ serverGroupName: sg.o.name, buildInfo: { images: buildImages } }] },
  };
}

/** ServerGroupViewModel: one row of `/applications/{app}/serverGroups` (not expanded). */
export function serverGroupViewModel(rel: Related, sg: Resource, cluster: string): Obj {
  const pods = rel.podsOf(sg);
  const labels = labelsOf(sg);
  const created = createdTime(sg);
  return {
    name: sg.fullName,
    account: sg.o.account,
    region: sg.o.namespace,
    cluster,
    type: 'kubernetes',
    cloudProvider: 'kubernetes',
    isDisabled: rel.disabled(sg),
    moniker: sg.moniker,
    buildInfo: { images: images(sg) },
    ...(created !== undefined ? { createdTime: created } : {}),
    capacity: capacity(sg),
    instances: pods.map(instanceViewModel),
    loadBalancers: rel.loadBalancerNames(sg),
    securityGroups: [],
    instanceCounts: instanceCounts(pods),
    ...(Object.keys(labels).length ? { labels } : {}),
    serverGroupManagers: managerRefs(rel, sg),
  };
}

/** The expanded row: the full model plus the cluster it was found in (ServerGroupController's expand=true). */
export function expandedServerGroup(rel: Related, sg: Resource, cluster: string): Obj {
  return {
    ...serverGroupModel(rel, sg),
    accountName: sg.o.account,
    cluster,
    application: sg.moniker.app,
    stack: sg.moniker.stack ?? null,
    freeFormDetail: sg.moniker.detail ?? null,
  };
}

/** KubernetesLoadBalancer (Service, Ingress), with the server groups behind it (`only`: restricted to these). */
export function loadBalancerModel(rel: Related, lb: Resource, only?: ReadonlySet<Resource>): Obj {
  return {
    ...baseFields(lb),
    type: 'kubernetes',
    serverGroups: rel
      .serverGroupsBehind(lb)
      .filter((sg) => !only || only.has(sg))
      .map((sg) => ({
        name: sg.fullName,
        account: sg.o.account,
        region: sg.o.namespace,
        isDisabled: false,
        detachedInstances: [],
        instances: rel.podsOf(sg).map(loadBalancerInstance),
        cloudProvider: 'kubernetes',
      })),
  };
}

/** KubernetesServerGroupManager (Deployment) with summaries of its ReplicaSets. */
export function serverGroupManagerModel(rel: Related, manager: Resource): Obj {
  return {
    ...baseFields(manager),
    serverGroups: rel.serverGroupsOf(manager).map((sg) => ({
      name: sg.fullName,
      account: sg.o.account,
      namespace: sg.o.namespace,
      region: sg.o.namespace,
      moniker: sg.moniker,
    })),
  };
}

/** Server groups of one (account, cluster) of the application. */
export function clusterServerGroups(rel: Related, account: string, cluster: string): Resource[] {
  return rel.serverGroups.filter((sg) => sg.o.account === account && clusterOf(sg.o) === cluster);
}

/** KubernetesCluster: with `expand`, its server groups and the load balancers in front of them. */
export function clusterModel(rel: Related, app: string, account: string, cluster: string, expand: boolean): Obj {
  const sgs = clusterServerGroups(rel, account, cluster);
  const members = new Set(sgs);
  const lbs = expand ? rel.loadBalancers.filter((lb) => rel.serverGroupsBehind(lb).some((sg) => members.has(sg))) : [];
  return {
    name: cluster,
    accountName: account,
    application: app,
    type: 'kubernetes',
    moniker: { app, cluster },
    serverGroups: expand ? sgs.map((sg) => serverGroupModel(rel, sg)) : [],
    loadBalancers: lbs.map((lb) => loadBalancerModel(rel, lb, members)),
  };
}

/** ClusterViewModel of `/applications/{app}/clusters/{account}`: names only. */
export function clusterViewModel(rel: Related, app: string, account: string, cluster: string): Obj {
  const sgs = clusterServerGroups(rel, account, cluster);
  const members = new Set(sgs);
  return {
    name: cluster,
    account,
    moniker: { app, cluster },
    loadBalancers: rel.loadBalancers
      .filter((lb) => rel.serverGroupsBehind(lb).some((sg) => members.has(sg)))
      .map((lb) => lb.fullName),
    serverGroups: sgs.map((sg) => sg.fullName),
  };
}

function portRanges(ports: Obj[]): Obj[] {
  return ports.map((p) =>
    typeof p.port === 'string'
      ? { startPortName: p.port, endPortName: p.port }
      : { startPort: p.port, endPort: typeof p.endPort === 'number' ? p.endPort : p.port },
  );
}

function rules(entries: unknown): Obj[] {
  return arr(entries).flatMap((rule) =>
    arr(rule.ports).map((p) => ({
      protocol: typeof p.protocol === 'string' ? p.protocol : 'TCP',
      ...(p.port !== undefined ? { portRanges: portRanges([p]) } : {}),
    })),
  );
}

export function securityGroupSummary(np: Resource): Obj {
  return { name: np.fullName, id: np.fullName };
}

/** KubernetesSecurityGroup (NetworkPolicy): one rule per port of its ingress and egress entries. */
export function securityGroupModel(np: Resource): Obj {
  const spec = obj(np.manifest.spec);
  return {
    ...baseFields(np),
    id: np.fullName,
    accountName: np.o.account,
    type: 'kubernetes',
    application: np.moniker.app,
    summary: securityGroupSummary(np),
    inboundRules: rules(spec?.ingress),
    outboundRules: rules(spec?.egress),
  };
}

/** KubernetesRawResource of `/applications/{app}/rawResources`. */
export function rawResourceModel(r: Resource): Obj {
  const { cloudProvider: _cp, ...base } = baseFields(r);
  return base;
}
