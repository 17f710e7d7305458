/** The labels every scale-agent object carries; selectors use only `name`, `component` and `instance`. */
export const PART_OF = 'scale-agent';

export function standardLabels(component: string, extra: Record<string, string> = {}): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'scale-agent',
    'app.kubernetes.io/component': component,
    'app.kubernetes.io/part-of': PART_OF,
    ...extra,
  };
}

export function selectorLabels(component: string): Record<string, string> {
  return { 'app.kubernetes.io/name': 'scale-agent', 'app.kubernetes.io/component': component };
}
