import type { CachedObject, ObjectReads } from '../cache/store.js';
import type { Obj } from './resource.js';

function when(e: Obj): string {
  for (const k of ['lastTimestamp', 'eventTime', 'firstTimestamp']) {
    const v = e[k];
    if (typeof v === 'string') return v;
  }
  const series = e.series as Obj | undefined;
  return typeof series?.lastObservedTime === 'string' ? series.lastObservedTime : '';
}

/** The cached Events of one namespace of an account, for eventsAbout (read apart so it can overlap the object's read). */
export function eventsIn(store: ObjectReads, account: string, namespace: string): Promise<CachedObject[]> {
  return store.list({ account, group: '', kind: 'Event', namespace });
}

/**
 * The Events about an object, as `GET /manifests/...` returns them (Clouddriver reads them live with
 * `involvedObject` field selectors; here they come from the cache, where agents keep Events by default), oldest
 * first, from the cached Events of its namespace (eventsIn). Matched by the object's uid, or by kind and name for
 * Events recorded without one.
 */
export function eventsAbout(o: CachedObject, events: readonly CachedObject[]): Obj[] {
  if (o.kind === 'Event') return [];
  const out: Obj[] = [];
  for (const e of events) {
    if (!e.json) continue;
    const event = JSON.parse(e.json) as Obj;
    const involved = event.involvedObject as Obj | undefined;
    if (!involved) continue;
    const same = o.uid && involved.uid ? involved.uid === o.uid : involved.kind === o.kind && involved.name === o.name;
    if (same) out.push(event);
  }
  return out.sort((a, b) => (when(a) < when(b) ? -1 : when(a) > when(b) ? 1 : 0));
}
