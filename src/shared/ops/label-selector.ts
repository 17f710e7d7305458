import type { LabelSelector } from './types.js';

/** Kubernetes label-selector syntax for Clouddriver's selector list. */
export function labelSelectorString(selectors: readonly LabelSelector[]): string {
  return selectors
    .map((s) => {
      switch (s.kind) {
        case 'ANY':
        case 'EXISTS':
          return s.key;
        case 'NOT_EXISTS':
          return `!${s.key}`;
        case 'EQUALS':
          return `${s.key}=${s.values[0] ?? ''}`;
        case 'NOT_EQUALS':
          return `${s.key}!=${s.values[0] ?? ''}`;
        case 'CONTAINS':
          return `${s.key} in (${s.values.join(',')})`;
        case 'NOT_CONTAINS':
          return `${s.key} notin (${s.values.join(',')})`;
      }
    })
    .join(',');
}
