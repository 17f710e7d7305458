/**
 * A plugin-server whose MySQL store is not reachable yet when it starts (in a cluster: the database's Service or
 * cluster DNS not up yet; on the real node a replica exited on `getaddrinfo EAI_AGAIN` and was restarted) waits for
 * it instead of exiting, and is ready once the store answers. Toxiproxy, disabled, refuses the connections until it
 * is enabled; the database is the shared MariaDB's.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, waitFor } from '../../infra/index.js';
import { PluginServerProcess } from '../../infra/processes.js';
import { Toxiproxy } from '../../infra/toxiproxy.js';

describe('plugin-server start with its MySQL store not reachable yet', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sa-store-start-'));
  let toxi: Toxiproxy;
  let db: Awaited<ReturnType<typeof createTestDatabase>>;
  let server: PluginServerProcess | undefined;
  beforeAll(async () => {
    db = await createTestDatabase('store_start');
    toxi = await Toxiproxy.start(dir);
  });
  afterAll(async () => {
    await server?.stop();
    await toxi?.stop();
    await db?.drop();
  });

  it('waits for the store and becomes ready once it answers, without exiting', async () => {
    const url = new URL(db.url);
    const through = await toxi.createProxy('mysql', `${url.hostname}:${url.port}`);
    await toxi.setEnabled('mysql', false);
    url.host = through;
    const logFile = join(dir, 'plugin-server.log');
    const starting = PluginServerProcess.start({ dir, storage: { type: 'mysql', url: url.toString() } });
    const log = () => {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    };
    await waitFor(
      'the server to say it waits for the store',
      () => log().includes('store unreachable at start'),
      30_000,
    );
    await toxi.setEnabled('mysql', true);
    server = await starting;
    expect((await server.get('/readyz')).status).toBe(200);
    expect(server.proc.running).toBe(true);
  });
});
