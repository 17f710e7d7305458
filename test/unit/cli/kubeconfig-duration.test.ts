import { describe, expect, it } from 'vitest';
import { parseDuration } from '../../../src/cli/kubeconfig/duration.js';

describe('parseDuration', () => {
  it('reads kubectl-style durations, with days', () => {
    expect(parseDuration('8760h')).toBe(31_536_000);
    expect(parseDuration('1h30m')).toBe(5400);
    expect(parseDuration('30d')).toBe(2_592_000);
    expect(parseDuration('600s')).toBe(600);
  });

  it('refuses what is not a duration, and anything under the TokenRequest minimum of 10 minutes', () => {
    for (const bad of ['', '8760', 'h', '1y', '1h 30m', '-1h', '1.5h']) {
      expect(() => parseDuration(bad), bad).toThrow(/not a duration/);
    }
    expect(() => parseDuration('9m59s')).toThrow(/at least 10m/);
  });
});
