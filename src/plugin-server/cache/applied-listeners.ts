import type { AppliedListener, StoreOp } from './store.js';

/** The subscribers of one store's onApplied (ObjectCache), told after each write it commits. */
export class AppliedListeners {
  private readonly listeners = new Set<AppliedListener>();

  add(listener: AppliedListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  notify(ops: readonly StoreOp[]): void {
    for (const l of this.listeners) l(ops);
  }
}
