import type { Logger } from '../shared/logging.js';

interface ScopeProgress {
  listed: number;
  /** Objects the scope's list will hold, when the API server said (LIST's remainingItemCount); else undefined. */
  total: number | undefined;
}

/**
 * One account's initial sync, for its log: objects listed, rate and — when every scope still listing has said how
 * many objects it holds — the total and an ETA, at most every `intervalMs`; then one line when it is done. A big
 * cluster takes minutes to list, and without this its log is silent from `account ready` to `/readyz` turning 200.
 */
export class SyncProgress {
  private readonly scopes = new Map<string, ScopeProgress>();
  private readonly startedAt: number;
  private lastLogAt: number;

  constructor(
    private readonly log: Logger,
    private readonly intervalMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.startedAt = this.lastLogAt = now();
  }

  listed(scope: string, listed: number, total: number | undefined): void {
    this.scopes.set(scope, { listed, total });
  }

  synced(scope: string, objects: number): void {
    this.scopes.set(scope, { listed: objects, total: objects });
  }

  private objects(): number {
    let n = 0;
    for (const s of this.scopes.values()) n += s.listed;
    return n;
  }

  /** Whether `intervalMs` has passed since the last line. */
  due(): boolean {
    return this.now() - this.lastLogAt >= this.intervalMs;
  }

  /** Logs progress if `intervalMs` has passed since the last line. `unsynced`: the account's scopes still listing. */
  tick(unsynced: string[], scopes: number): void {
    const now = this.now();
    if (now - this.lastLogAt < this.intervalMs) return;
    this.lastLogAt = now;
    const objects = this.objects();
    const seconds = (now - this.startedAt) / 1000;
    const rate = seconds > 0 ? objects / seconds : 0;
    const fields: Record<string, number> = {
      objects,
      objectsPerSecond: Math.round(rate),
      scopesSynced: scopes - unsynced.length,
      scopes,
      seconds: Math.round(seconds),
    };
    // A scope waiting for a sync slot, or read as a streaming list, has not said how big it is: no total then.
    if (unsynced.every((id) => this.scopes.get(id)?.total !== undefined)) {
      let total = 0;
      for (const s of this.scopes.values()) total += s.total ?? s.listed;
      fields.total = total;
      if (rate > 0) fields.etaSeconds = Math.ceil(Math.max(0, total - objects) / rate);
    }
    this.log.info(fields, 'initial sync progress');
  }

  done(scopes: number): void {
    const objects = this.objects();
    const seconds = (this.now() - this.startedAt) / 1000;
    this.log.info(
      {
        objects,
        scopes,
        seconds: Math.round(seconds * 10) / 10,
        objectsPerSecond: seconds > 0 ? Math.round(objects / seconds) : objects,
      },
      'initial sync done',
    );
  }
}
