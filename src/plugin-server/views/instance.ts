import { arr, baseFields, obj, type Obj, type Resource } from './resource.js';

export type HealthState = 'Up' | 'Down' | 'Unknown' | 'Starting' | 'Succeeded' | 'Failed' | 'OutOfService';

export interface Health {
  state: HealthState;
  source: string;
  type: string;
  platform: 'platform';
}

/**
 * A Pod's health as Clouddriver reports it (KubernetesHealth): one entry for the phase (Running is Up, Pending is
 * Down, anything else Unknown), then one per container (ready is Up, else Down); none without a status.
 */
export function podHealth(pod: Resource): Health[] {
  const status = obj(pod.manifest.status);
  if (!status) return [];
  const phase = typeof status.phase === 'string' ? status.phase.toLowerCase() : '';
  const out: Health[] = [
    {
      state: phase === 'running' ? 'Up' : phase === 'pending' ? 'Down' : 'Unknown',
      source: 'Pod',
      type: 'kubernetes/pod',
      platform: 'platform',
    },
  ];
  for (const c of arr(status.containerStatuses)) {
    out.push({
      state: c.ready === true ? 'Up' : 'Down',
      source: `Container ${String(c.name)}`,
      type: 'kubernetes/container',
      platform: 'platform',
    });
  }
  return out;
}

/** Clouddriver's aggregate (HealthHelper): all known Up → Up, all known Succeeded → Succeeded, then by precedence. */
export function healthState(health: readonly Health[]): HealthState {
  const known = health.filter((h) => h.state !== 'Unknown');
  if (known.length > 0 && known.every((h) => h.state === 'Up')) return 'Up';
  if (known.length > 0 && known.every((h) => h.state === 'Succeeded')) return 'Succeeded';
  for (const s of ['Starting', 'Down', 'Failed', 'OutOfService'] as const) {
    if (known.some((h) => h.state === s)) return s;
  }
  return 'Unknown';
}

/** KubernetesInstance: `name` is the Pod's uid (Deck's instance id), `humanReadableName` its "pod name". */
export function instanceModel(pod: Resource): Obj {
  const health = podHealth(pod);
  const { region: _region, ...base } = baseFields(pod);
  return {
    ...base,
    name: pod.uid,
    humanReadableName: pod.fullName,
    zone: pod.o.namespace,
    providerType: 'kubernetes',
    health,
    healthState: healthState(health),
  };
}

/** InstanceViewModel of the server group list: Clouddriver keeps only type and state of each health entry. */
export function instanceViewModel(pod: Resource): Obj {
  const health = podHealth(pod);
  return {
    id: pod.uid,
    name: pod.fullName,
    healthState: healthState(health),
    availabilityZone: pod.o.namespace,
    health: health.map((h) => ({ type: h.type, state: h.state })),
  };
}

/** A load balancer's view of an instance: one health map, the pod's entries merged in order. */
export function loadBalancerInstance(pod: Resource): Obj {
  return {
    id: pod.uid,
    name: pod.fullName,
    zone: pod.o.namespace,
    health: Object.assign({}, ...podHealth(pod)) as Obj,
  };
}

export function instanceCounts(pods: readonly Resource[]): Obj {
  const counts = { total: pods.length, up: 0, down: 0, unknown: 0, outOfService: 0, starting: 0 };
  for (const p of pods) {
    const s = healthState(podHealth(p));
    if (s === 'Up') counts.up += 1;
    else if (s === 'Down') counts.down += 1;
    else if (s === 'OutOfService') counts.outOfService += 1;
    else if (s === 'Starting') counts.starting += 1;
    else if (s === 'Unknown') counts.unknown += 1;
  }
  return counts;
}
