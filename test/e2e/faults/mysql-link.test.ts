/**
 * The plugin-server's link to MariaDB blackholed (packets dropped, nothing reset) for longer than the session idle
 * timeout while churn and REST operations run: /readyz says not ready, naming the store, within its own bound
 * instead of hanging with the ping; once the link is back the cache equals the API server and every operation ended
 * once (MySQL store, the shared MariaDB behind Toxiproxy).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { faultById, FaultRig, Load, runFault } from '../../infra/faults/index.js';
import { testEnv } from '../../infra/index.js';
import { expectSurvived } from './_survived.js';

describe('faults: plugin-server ↔ MariaDB (MySQL store)', () => {
  let rig: FaultRig;
  let load: Load;

  beforeAll(async () => {
    rig = await FaultRig.start({
      dir: mkdtempSync(join(tmpdir(), 'sa-faults-mysql-')),
      store: 'mysql',
      controlPlane: { kubeconfig: testEnv().kubeconfig },
      mariadb: { serverUrl: testEnv().mysqlUrl },
    });
    load = await Load.create(rig);
  });
  afterAll(async () => {
    await rig?.stop();
  });

  it('MariaDB blackholed: not ready (store named) during, converges after, nothing lost or run twice', async () => {
    const r = await runFault(rig, load, faultById('blackhole:mysql'));
    expect(r.during.readyz).toBe(503);
    expect(r.during.readyzReasons).toEqual([expect.stringMatching(/^store: no answer within \d+ ms$/)]);
    expectSurvived(r);
    expect((await rig.server.get('/readyz')).status).toBe(200);
  });
});
