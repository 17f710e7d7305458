import { writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { ControlPlane } from './control-plane.js';
import { MariaDb } from './mariadb.js';
import { pidAlive } from './processes-group.js';

/**
 * Vitest global setup for the integration project: one real control plane and one MariaDB server for the
 * whole run. Workers inherit their coordinates through environment variables. Teardown stops both and
 * fails the run if any of their processes survived.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const log = (line: string) => console.error(`[test-infra] ${line}`);
  const [cp, db] = await Promise.all([
    ControlPlane.start({ log }),
    process.env.SCALE_AGENT_TEST_MYSQL_URL ? Promise.resolve(undefined) : MariaDb.start({ log }),
  ]);
  process.env.SCALE_AGENT_TEST_KUBECONFIG = cp.kubeconfig;
  process.env.SCALE_AGENT_TEST_K8S_BIN = cp.binDir;
  process.env.SCALE_AGENT_TEST_K8S_SERVER = cp.server;
  if (db) process.env.SCALE_AGENT_TEST_MYSQL_URL = db.url;
  const pids = [...cp.pids(), ...(db ? [db.pid] : [])];
  // For `npm test`'s final leak check and for humans debugging a hung run.
  writeFileSync(process.env.SCALE_AGENT_TEST_PIDFILE ?? '/tmp/scale-agent-test.pids', pids.join('\n') + '\n');

  return async () => {
    await Promise.allSettled([cp.stop(), db?.stop()]);
    // Process exit is asynchronous to the kill; give the kernel a moment before judging.
    for (let i = 0; i < 50 && pids.some(pidAlive); i++) await sleep(100);
    const left = pids.filter(pidAlive);
    if (left.length) throw new Error(`test infrastructure left processes running: ${left.join(', ')}`);
    log(`stopped control plane and MariaDB; no process left (${pids.length} checked)`);
  };
}
