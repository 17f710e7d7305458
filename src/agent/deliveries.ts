/**
 * Which operation ids reached this process on which of its sessions, so that an operation delivered again after its
 * outcome was lost (`Operation.sent_before_on_sessions`) can be told apart: if every earlier delivery was on a session
 * of this process and none of them brought the id, those deliveries never arrived and the operation runs as a first
 * one; otherwise (a session of another process: the agent restarted, another agent of the group, a peer replica's
 * forward) an earlier delivery may have run here unseen, and a change that would apply twice must find its mark.
 *
 * Bounded: the last `maxSessions` sessions and `maxIds` ids in all. Past the id bound the oldest other sessions are
 * forgotten first; a session that alone holds `maxIds` stops recording. Either can no longer prove an absence, so it
 * answers "may have arrived", never a wrong "never". The bound is on the total, not per session: an agent that
 * reconnects now and then under steady operations would otherwise keep up to 64 sessions × 20,000 ids for good
 * (~83 bytes an id of a task id's length, as a string decoded from the wire in a Set: ~100 MB).
 */
export interface DeliveryLogOptions {
  maxSessions?: number;
  /** Ids kept across all sessions. Default 20,000 (about 2 MB). */
  maxIds?: number;
}

interface SessionLog {
  ids: Set<string>;
  complete: boolean;
}

export class DeliveryLog {
  private readonly sessions = new Map<string, SessionLog>();
  private readonly maxSessions: number;
  private readonly maxIds: number;
  private ids = 0;

  constructor(options: DeliveryLogOptions = {}) {
    this.maxSessions = options.maxSessions ?? 64;
    this.maxIds = options.maxIds ?? 20_000;
  }

  /** Ids recorded now, across every session kept. */
  get size(): number {
    return this.ids;
  }

  /** A stream of this process was welcomed as `sessionId`: from now on, what arrives on it is recorded. */
  opened(sessionId: string): void {
    this.session(sessionId);
  }

  /** An operation id arrived on `sessionId` (the Welcome's session id of the stream it came on). */
  arrived(sessionId: string, operationId: string): void {
    const log = this.session(sessionId);
    if (!log?.complete || log.ids.has(operationId)) return;
    // Oldest other session first out, then this one stops recording.
    for (const [old, oldLog] of this.sessions) {
      if (this.ids < this.maxIds || oldLog === log) break;
      this.forget(old, oldLog);
    }
    if (this.ids >= this.maxIds) {
      log.complete = false;
      this.ids -= log.ids.size;
      log.ids = new Set();
      return;
    }
    log.ids.add(operationId);
    this.ids += 1;
  }

  /**
   * True only when every session named was this process's, recorded completely, and none brought `operationId`:
   * the earlier deliveries never arrived. False for an empty list too (nothing to prove).
   */
  neverArrived(operationId: string, sessionIds: readonly string[]): boolean {
    if (sessionIds.length === 0) return false;
    return sessionIds.every((s) => {
      const log = this.sessions.get(s);
      return log !== undefined && log.complete && !log.ids.has(operationId);
    });
  }

  private session(sessionId: string): SessionLog | undefined {
    if (!sessionId) return undefined;
    let log = this.sessions.get(sessionId);
    if (log) return log;
    log = { ids: new Set(), complete: true };
    this.sessions.set(sessionId, log);
    // Oldest session first out (a Map keeps insertion order).
    for (const [old, oldLog] of this.sessions) {
      if (this.sessions.size <= this.maxSessions) break;
      this.forget(old, oldLog);
    }
    return log;
  }

  private forget(sessionId: string, log: SessionLog): void {
    this.sessions.delete(sessionId);
    this.ids -= log.ids.size;
  }
}
