import type { KindCount, ObjectCache } from './store.js';

/**
 * Object counts per account and kind for /metrics, recomputed at most once per `maxAgeMs`: on MySQL a count is a
 * GROUP BY over the whole cache table, which a Prometheus scraping every few seconds (or several of them) would
 * otherwise run each time. Scrapes arriving while a count is running share it; a failed count is not kept.
 */
export class CountSnapshot {
  private value: KindCount[] = [];
  private takenAt = Number.NEGATIVE_INFINITY;
  private running: Promise<KindCount[]> | undefined;

  constructor(
    private readonly store: Pick<ObjectCache, 'counts'>,
    private readonly maxAgeMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(): Promise<KindCount[]> {
    if (this.now() - this.takenAt < this.maxAgeMs) return Promise.resolve(this.value);
    this.running ??= this.store
      .counts()
      .then((v) => {
        this.value = v;
        this.takenAt = this.now();
        return v;
      })
      .finally(() => (this.running = undefined));
    return this.running;
  }
}
