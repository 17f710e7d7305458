/** Exponential backoff with jitter, grpc-go's formula: min(base × multiplier^n, max) × (1 ± jitter). */
export interface BackoffOptions {
  baseMs: number;
  multiplier: number;
  jitter: number;
  maxMs: number;
}

/** The stream's reconnect policy (the Armory agent's `clouddriver.backoff` defaults). */
export const RECONNECT_BACKOFF: BackoffOptions = { baseMs: 1000, multiplier: 1.6, jitter: 0.2, maxMs: 120_000 };
/** Watches retry faster than the stream: an API server hiccup should cost seconds, not minutes. */
export const WATCH_BACKOFF: BackoffOptions = { baseMs: 500, multiplier: 2, jitter: 0.2, maxMs: 30_000 };

export class Backoff {
  private attempt = 0;

  constructor(
    private readonly options: BackoffOptions,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt; each call lengthens the following one. */
  next(): number {
    const { baseMs, multiplier, jitter, maxMs } = this.options;
    const raw = Math.min(baseMs * multiplier ** this.attempt, maxMs);
    // Stop growing the exponent once capped, so a long outage cannot overflow it.
    if (raw < maxMs) this.attempt += 1;
    const factor = 1 + jitter * (this.random() * 2 - 1);
    return Math.max(0, Math.round(raw * factor));
  }

  /** Called after a success: the next failure starts from the base delay again. */
  reset(): void {
    this.attempt = 0;
  }

  get attempts(): number {
    return this.attempt;
  }
}
