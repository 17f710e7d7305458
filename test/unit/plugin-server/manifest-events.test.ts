import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import type { CachedObject, ListFilter } from '../../../src/plugin-server/cache/store.js';
import type { PluginServer } from '../../../src/plugin-server/server.js';
import { account, change, configMap, getJson, startServer, TestAgent } from './helpers.js';

/** The memory store, whose reads of Events fail while `failEvents` is set (a database that drops one query). */
class EventsFailingStore extends MemoryCacheStore {
  failEvents = false;
  override async list(filter: ListFilter): Promise<CachedObject[]> {
    if (this.failEvents && filter.kind === 'Event') throw new Error('Events read failed');
    return super.list(filter);
  }
}

function event(name: string, namespace: string, at: string, involved: Record<string, string>) {
  return {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: { name, namespace, resourceVersion: '1' },
    involvedObject: involved,
    reason: name,
    lastTimestamp: at,
  };
}

// GET /manifests reads the object's namespace's Events beside the object (manifest-routes.ts): these check that the
// Events it answers are still exactly the object's, oldest first, and that a failed Events read neither hides a 404
// nor goes unhandled.
describe('GET /manifests with Events', () => {
  const store = new EventsFailingStore();
  let server: PluginServer;
  let base: string;
  let agent: TestAgent;

  beforeAll(async () => {
    let address: string;
    ({ server, base, address } = await startServer('', store));
    agent = new TestAgent(address);
    await agent.hello([{ ...account('dev'), namespaces: [] }]);
    const web = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'shop', resourceVersion: '2' },
    };
    await agent.batch([
      change('dev', 'ADDED', web),
      change('dev', 'ADDED', configMap('web-config', '3', {}, 'shop')),
      // About the Deployment by uid (change() gives every object the uid "uid-<name>"), newest first here.
      change(
        'dev',
        'ADDED',
        event('scaled', 'shop', '2026-11-28T10:00:02Z', { kind: 'Deployment', name: 'web', uid: 'uid-web' }),
      ),
      change(
        'dev',
        'ADDED',
        event('created', 'shop', '2026-11-28T10:00:01Z', { kind: 'Deployment', name: 'web', uid: 'uid-web' }),
      ),
      // Recorded without a uid: matched by kind and name.
      change('dev', 'ADDED', event('noted', 'shop', '2026-11-28T10:00:03Z', { kind: 'Deployment', name: 'web' })),
      // Not about it: another object, a same-named object of another kind, the same name in another namespace.
      change(
        'dev',
        'ADDED',
        event('cm', 'shop', '2026-11-28T10:00:00Z', { kind: 'ConfigMap', name: 'web-config', uid: 'uid-web-config' }),
      ),
      change('dev', 'ADDED', event('other-kind', 'shop', '2026-11-28T10:00:00Z', { kind: 'Service', name: 'web' })),
      change(
        'dev',
        'ADDED',
        event('elsewhere', 'staging', '2026-11-28T10:00:00Z', { kind: 'Deployment', name: 'web' }),
      ),
    ]);
  });
  afterAll(async () => {
    agent.close();
    await server.stop();
  });

  it("answers the object's Events, oldest first, and none with includeEvents=false", async () => {
    const r = await getJson(`${base}/manifests/dev/shop/deployment%20web`);
    expect(r.status).toBe(200);
    expect((r.body as { events: { reason: string }[] }).events.map((e) => e.reason)).toEqual([
      'created',
      'scaled',
      'noted',
    ]);
    const cm = await getJson(`${base}/manifests/dev/shop/configMap%20web-config`);
    expect((cm.body as { events: { reason: string }[] }).events.map((e) => e.reason)).toEqual(['cm']);
    expect((await getJson(`${base}/manifests/dev/shop/deployment%20web?includeEvents=false`)).body).toMatchObject({
      events: [],
    });
    // An Event's own manifest has no Events.
    expect((await getJson(`${base}/manifests/dev/shop/event%20scaled`)).body).toMatchObject({
      manifest: { reason: 'scaled' },
      events: [],
    });
  });

  it('answers 404 for a missing object and an error for a present one when the Events read fails', async () => {
    store.failEvents = true;
    try {
      const missing = await getJson(`${base}/manifests/dev/shop/deployment%20gone`);
      expect(missing).toMatchObject({ status: 404, body: { code: 'SA_ERR_NOT_FOUND' } });
      const present = await getJson(`${base}/manifests/dev/shop/deployment%20web`);
      expect(present.status).toBe(500);
      // Without Events the read does not touch them, and answers.
      const without = await getJson(`${base}/manifests/dev/shop/deployment%20web?includeEvents=false`);
      expect(without).toMatchObject({ status: 200, body: { name: 'deployment web' } });
    } finally {
      store.failEvents = false;
    }
  });
});
