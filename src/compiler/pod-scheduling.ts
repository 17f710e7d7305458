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
