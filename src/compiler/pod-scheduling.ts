import { selectorLabels } from '../../cdk8s/index.js';
import type { PodSettings } from './topology.js';

type Selector = { matchLabels?: Record<string, string> };
type AffinityTerm = { labelSelector?: Selector };

/**
 * Pod selectors inside scheduling rules (spread constraints, pod (anti-)affinity) that list matchLabels also get the
 * instance label, so a rule written for "the agent" spreads this group's pods only. Kustomize's label transformer
 * does the same to these fields, so the overlay, manifests and Helm values stay one set of objects.
 */
export function scopedToInstance(pod: PodSettings, instance: Record<string, string>): PodSettings {
  const scope = <T extends AffinityTerm>(term: T): T =>
    term.labelSelector?.matchLabels
      ? {
          ...term,
          labelSelector: { ...term.labelSelector, matchLabels: { ...term.labelSelector.matchLabels, ...instance } },
        }
      : term;
  const scopeAffinity = (a: Record<string, unknown> | undefined): Record<string, unknown> | undefined => {
    if (!a) return a;
    const out: Record<string, unknown> = { ...a };
    for (const kind of ['podAffinity', 'podAntiAffinity'] as const) {
      const rules = a[kind] as
        | {
            requiredDuringSchedulingIgnoredDuringExecution?: AffinityTerm[];
            preferredDuringSchedulingIgnoredDuringExecution?: { weight: number; podAffinityTerm: AffinityTerm }[];
          }
        | undefined;
      if (!rules) continue;
      out[kind] = {
        ...rules,
        ...(rules.requiredDuringSchedulingIgnoredDuringExecution
          ? {
              requiredDuringSchedulingIgnoredDuringExecution:
                rules.requiredDuringSchedulingIgnoredDuringExecution.map(scope),
            }
          : {}),
        ...(rules.preferredDuringSchedulingIgnoredDuringExecution
          ? {
              preferredDuringSchedulingIgnoredDuringExecution:
                rules.preferredDuringSchedulingIgnoredDuringExecution.map((w) => ({
                  ...w,
                  podAffinityTerm: scope(w.podAffinityTerm),
                })),
            }
          : {}),
      };
    }
    return out;
  };
  const affinity = scopeAffinity(pod.affinity);
  return {
    ...pod,
    ...(affinity ? { affinity } : {}),
    ...(pod.topologySpreadConstraints
      ? { topologySpreadConstraints: pod.topologySpreadConstraints.map((c) => scope(c as AffinityTerm)) }
      : {}),
  };
}

/** Failure domains a component's replicas spread over by default: nodes, then zones. */
export const DEFAULT_SPREAD_KEYS = ['kubernetes.io/hostname', 'topology.kubernetes.io/zone'];

/**
 * Replicas on one node or in one zone fail together, so a component with more than one replica spreads them unless
 * the topology says how (its own `topologySpreadConstraints`, `[]` for none). Soft (ScheduleAnyway): a cluster with
 * one node or one zone still runs every replica. The selector is the component's; scopedToInstance adds the instance.
 */
export function withDefaultSpread(pod: PodSettings, replicas: number, component: string): PodSettings {
  if (replicas <= 1 || pod.topologySpreadConstraints !== undefined) return pod;
  return {
    ...pod,
    topologySpreadConstraints: DEFAULT_SPREAD_KEYS.map((topologyKey) => ({
      maxSkew: 1,
      topologyKey,
      whenUnsatisfiable: 'ScheduleAnyway',
      labelSelector: { matchLabels: selectorLabels(component) },
    })),
  };
}
