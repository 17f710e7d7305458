import type { ApiResource } from '../../../src/agent/kube/resources.js';
import type { ReflectorSink, WatchScope } from '../../../src/agent/reflector.js';
import { ChangeType, type Change } from '../../../src/shared/proto.js';
import { createLogger } from '../../../src/shared/logging.js';

/** The resource the reflector tests watch. */
export const CONFIGMAPS: ApiResource = {
  group: '',
  version: 'v1',
  kind: 'ConfigMap',
  resource: 'configmaps',
  namespaced: true,
};

export const logger = createLogger({ name: 'agent-test', level: process.env.SCALE_AGENT_LOG_LEVEL ?? 'warn' });

export type Recorded =
  | { t: 'syncStart'; kind: string; namespace: string }
  | { t: 'syncEnd'; kind: string; rv: string }
  | { t: 'bookmark'; kind: string; rv: string }
  | { t: 'ADDED' | 'MODIFIED' | 'DELETED'; kind: string; namespace: string; name: string; rv: string; json: string };

const TYPES: Record<number, 'ADDED' | 'MODIFIED' | 'DELETED'> = {
  [ChangeType.CHANGE_TYPE_ADDED]: 'ADDED',
  [ChangeType.CHANGE_TYPE_MODIFIED]: 'MODIFIED',
  [ChangeType.CHANGE_TYPE_DELETED]: 'DELETED',
};

/** Records everything a reflector emits; `room` toggles backpressure. */
export class RecordingSink implements ReflectorSink {
  readonly events: Recorded[] = [];
  room = true;
  /** Turn the room off by itself once this many changes arrived (to hold a LIST between two pages). */
  holdAfterChanges: number | undefined;
  private waiters: (() => void)[] = [];

  syncStart(s: WatchScope): void {
    this.events.push({ t: 'syncStart', kind: s.resource.kind, namespace: s.namespace });
  }
  syncEnd(s: WatchScope, rv: string): void {
    this.events.push({ t: 'syncEnd', kind: s.resource.kind, rv });
  }
  bookmark(s: WatchScope, rv: string): void {
    this.events.push({ t: 'bookmark', kind: s.resource.kind, rv });
  }
  change(_s: WatchScope, c: Change): void {
    this.events.push({
      t: TYPES[c.type] ?? 'ADDED',
      kind: c.kind,
      namespace: c.namespace,
      name: c.name,
      rv: c.resourceVersion,
      json: Buffer.from(c.objectJson).toString('utf8'),
    });
    if (this.holdAfterChanges !== undefined && this.changes().length >= this.holdAfterChanges) {
      this.holdAfterChanges = undefined;
      this.room = false;
    }
  }
  hasRoom(): boolean {
    return this.room;
  }
  waitForRoom(signal: AbortSignal): Promise<void> {
    if (this.room) return Promise.resolve();
    return new Promise((resolve) => {
      this.waiters.push(resolve);
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  }
  /** How many reflectors are parked in waitForRoom (stopped reading until there is room). */
  waiting(): number {
    return this.waiters.length;
  }
  setRoom(room: boolean): void {
    this.room = room;
    if (room) for (const w of this.waiters.splice(0)) w();
  }
  changes(): Extract<Recorded, { name: string }>[] {
    return this.events.filter((e): e is Extract<Recorded, { name: string }> => 'name' in e);
  }
  count(t: Recorded['t']): number {
    return this.events.filter((e) => e.t === t).length;
  }
}

export { waitFor } from '../../infra/wait.js';
