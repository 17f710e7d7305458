/**
 * One real node per machine (fixed ports and paths): a lock directory that holds its owner's pid. mkdir is atomic;
 * a lock whose owner died is taken over. Test runs of several checkouts on one machine take turns.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { pidAlive } from '../processes-group.js';

const LOCK = '/run/scale-agent-real-node.lock';

export async function lockMachine(timeoutMs: number, log: (line: string) => void): Promise<() => void> {
  const deadline = Date.now() + timeoutMs;
  let said = false;
  for (;;) {
    try {
      mkdirSync(LOCK);
      writeFileSync(`${LOCK}/pid`, String(process.pid));
      return () => rmSync(LOCK, { recursive: true, force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    let owner = 0;
    try {
      owner = Number(readFileSync(`${LOCK}/pid`, 'utf8'));
    } catch {
      // being created or removed right now
    }
    if (owner && !pidAlive(owner)) {
      log(`taking over ${LOCK} from pid ${owner}, which is gone`);
      rmSync(LOCK, { recursive: true, force: true });
      continue;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `another real node runs on this machine (pid ${owner} holds ${LOCK}); gave up after ${timeoutMs / 1000} s`,
      );
    }
    if (!said && owner) log(`waiting for the real node of pid ${owner} (${LOCK})`);
    said ||= !!owner;
    await sleep(500);
  }
}
