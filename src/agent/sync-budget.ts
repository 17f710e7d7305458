/**
 * Bounds how many watch scopes of the whole agent run their initial list at the same time (Armory's
 * tasks.totalBudget). A list streams objects as fast as the API server sends them; when the send queue is full
 * each listing stream still holds up to its HTTP/2 window of unread data, so a hundred accounts listing at once
 * would hold a hundred windows. Watches resumed from a resourceVersion need no slot.
 */
export class SyncBudget {
  private active = 0;
  /** No slot taken and none waiting; a slot handed straight on to a waiter does not make the budget idle. */
  private idle = true;
  private readonly waiting: (() => void)[] = [];

  /**
   * `hooks.onBusy`: the first slot is taken (an initial list starts while none ran); `hooks.onIdle`: the last slot
   * is released with nobody waiting (every initial list is done).
   */
  constructor(
    private limit: number,
    private readonly hooks: { onBusy?(): void; onIdle?(): void } = {},
  ) {}

  /** Resolves with a release function once a slot is free (or at once, without a slot, on abort). */
  acquire(signal: AbortSignal): Promise<() => void> {
    if (this.active < this.limit) return Promise.resolve(this.slot());
    return new Promise((resolve) => {
      const grant = (): void => {
        signal.removeEventListener('abort', onAbort);
        resolve(this.slot());
      };
      const onAbort = (): void => {
        const i = this.waiting.indexOf(grant);
        if (i >= 0) this.waiting.splice(i, 1);
        resolve(() => undefined);
      };
      this.waiting.push(grant);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  setLimit(limit: number): void {
    this.limit = limit;
    this.drain();
  }

  get inUse(): number {
    return this.active;
  }

  get queued(): number {
    return this.waiting.length;
  }

  private slot(): () => void {
    this.active += 1;
    if (this.idle) {
      this.idle = false;
      this.hooks.onBusy?.();
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.active -= 1;
      this.drain();
      if (this.active === 0 && this.waiting.length === 0) {
        this.idle = true;
        this.hooks.onIdle?.();
      }
    };
  }

  private drain(): void {
    while (this.active < this.limit && this.waiting.length > 0) this.waiting.shift()?.();
  }
}
