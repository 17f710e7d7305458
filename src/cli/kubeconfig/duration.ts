import { ScaleAgentError } from '../../shared/errors.js';

const UNIT_SECONDS: Record<string, number> = { d: 86_400, h: 3600, m: 60, s: 1 };

/** The shortest token the TokenRequest API issues (expirationSeconds ≥ 600). */
export const MIN_TOKEN_SECONDS = 600;

/**
 * Seconds of a duration as kubectl writes them (`8760h`, `1h30m`, `90m`), with `d` for days as well. A TokenRequest
 * cannot be shorter than 10 minutes, so shorter durations are refused here rather than by the API server.
 */
export function parseDuration(text: string, flag = '--duration'): number {
  const parts = [...text.matchAll(/(\d+)([dhms])/g)];
  if (parts.length === 0 || parts.map((p) => p[0]).join('') !== text) {
    throw new ScaleAgentError('INVALID_INPUT', `${flag} ${text}: not a duration (write e.g. 8760h, 30d, 1h30m)`);
  }
  const seconds = parts.reduce((sum, [, n, unit]) => sum + Number(n) * (UNIT_SECONDS[unit ?? 's'] ?? 1), 0);
  if (seconds < MIN_TOKEN_SECONDS) {
    throw new ScaleAgentError('INVALID_INPUT', `${flag} ${text}: tokens last at least 10m (the API server's minimum)`);
  }
  return seconds;
}
