/**
 * The plugin-server's link to its SQL store blackholed (packets dropped, nothing reset) for longer than the session
 * idle timeout while churn and REST operations run: /readyz says not ready, naming the store, within its own bound
 * instead of hanging with the ping; once the link is back the cache equals the API server and every operation ended
 * once. For each SQL store: MySQL (the test run's shared MariaDB) and PostgreSQL (a server of the file's own), each
 * behind Toxiproxy.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { faultById, FaultRig, Load, runFault } from '../../infra/faults/index.js';
import { waitFor } from '../../infra/wait.js';
import { expectSurvived } from './_survived.js';

describe.each([
  ['MariaDB (MySQL store)', 'mysql'],
  ['PostgreSQL (PostgreSQL store)', 'postgres'],
] as const)('faults: plugin-server ↔ %s', (server, store) => {
  let rig: FaultRig;
  let load: Load;

  beforeAll(async () => {
    rig = await FaultRig.onSharedCluster(store, { store });
    load = await Load.create(rig);
  });
  afterAll(async () => {
    await rig?.stop();
  });

  it(`${server.split(' ')[0]} blackholed: not ready (store named) during, converges after, nothing lost or run twice`, async () => {
    const r = await runFault(rig, load, faultById(`blackhole:${store}`));
    expect(r.during.readyz).toBe(503);
    // The store named within its bound; past a lease period the leases' renewal is named too, depending on when in
    // the 8 s the probe landed (both are the same outage).
    expect(r.during.readyzReasons).toContainEqual(expect.stringMatching(/^store: no answer within \d+ ms$/));
    for (const reason of r.during.readyzReasons ?? []) {
      expect(reason).toMatch(
        /^(store: no answer within \d+ ms|account leases not renewed in time \(the store does not answer\))$/,
      );
    }
    expectSurvived(r);
    // Ready again once the link is back. Not at the very moment the cache has converged: /readyz also wants a lease
    // renewal after the outage (a replica that could not renew must not take traffic), which comes on the registry's
    // own schedule; a run on a fresh clone saw 503 at that instant. Throws, naming the last answer, if it never does.
    await waitFor('/readyz to answer 200 after the link is back', async () => {
      const res = await rig.server.get('/readyz');
      if (res.status !== 200) throw new Error(`/readyz ${res.status}: ${JSON.stringify(res.body)}`);
      return true;
    });
  });
});
