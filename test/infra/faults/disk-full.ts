/**
 * The disk under MariaDB's data dir full: a ballast file fills its tmpfs to the last byte, and the fault holds until
 * it shows (bounded): InnoDB writes into pages it has already allocated, so only a write that must grow a file
 * fails, and that takes new rows (the operations' task records, the churn's new objects). What shows: MariaDB's
 * error log or the plugin-server's log naming a full disk, or /readyz not ready. If nothing shows within the bound
 * the fault is reported as not having bitten. A MariaDB that aborts meanwhile is reported and started again.
 */
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fault } from './catalogue.js';
import type { FaultRig } from './rig.js';

const BALLAST = 'ballast';
const BITE_WITHIN_MS = 60_000;
/** MariaDB: "The table ... is full" (1114), "Disk full" (1021), errno 28; Node: ENOSPC. */
const FULL = /is full|disk full|errno: 28|No space left|ENOSPC|ER_RECORD_FILE_FULL|ER_DISK_FULL/i;

function fill(path: string): void {
  const fd = openSync(path, 'w');
  const chunk = Buffer.alloc(1 << 20);
  try {
    // A short write leaves less than a chunk: the next one fails with ENOSPC, the disk is full to the byte.
    for (;;) writeSync(fd, chunk);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
  } finally {
    closeSync(fd);
  }
}

/** Lines of a log written after `offset` that name a full disk. */
function fullLines(file: string, offset: number): string[] {
  try {
    return readFileSync(file, 'utf8')
      .slice(offset)
      .split('\n')
      .filter((l) => FULL.test(l));
  } catch {
    return [];
  }
}

/** MariaDB's own account of an abort (the FATAL line, else the signal line) after `offset`. */
function crashLine(file: string, offset: number): string {
  const lines = readFileSync(file, 'utf8').slice(offset).split('\n');
  const line = lines.find((l) => /\[FATAL\]/.test(l)) ?? lines.find((l) => /got signal/.test(l)) ?? 'no reason logged';
  return line.trim().slice(0, 200);
}

function size(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

async function readyz(rig: FaultRig): Promise<{ status: number; reasons?: string[] }> {
  try {
    const res = await fetch(`${rig.server.httpBase}/readyz`, { signal: AbortSignal.timeout(3_000) });
    return { status: res.status, reasons: ((await res.json()) as { reasons?: string[] }).reasons };
  } catch {
    return { status: 0 };
  }
}

export function diskFullFault(): Fault {
  let logs: { file: string; offset: number }[] = [];
  let bite: { afterMs: number; what: string } | undefined;
  const seen = () => ({
    mariadb: fullLines(logs[0]!.file, logs[0]!.offset),
    pluginServer: fullLines(logs[1]!.file, logs[1]!.offset),
  });
  return {
    id: 'disk-full:mariadb',
    fault: 'disk full until it bites (≤ 60 s), then 8 s',
    target: 'mariadb',
    needs: { mysql: true, privateMariadb: true, tmpfs: true },
    holdMs: 8_000,
    inject: async (rig) => {
      logs = [rig.mariadb!.logFile, rig.server.logFile].map((file) => ({ file, offset: size(file) }));
      bite = undefined;
      const t0 = Date.now();
      fill(join(rig.mariadb!.datadir, BALLAST));
      while (Date.now() - t0 < BITE_WITHIN_MS) {
        const s = seen();
        const r = await readyz(rig);
        const what = [
          r.status !== 200 ? `/readyz ${r.status} ${JSON.stringify(r.reasons ?? [])}` : '',
          s.mariadb[0] ? `mariadbd: ${s.mariadb[0].trim().slice(0, 200)}` : '',
          s.pluginServer[0] ? `plugin-server: ${s.pluginServer[0].trim().slice(0, 300)}` : '',
        ].filter(Boolean);
        if (what.length) {
          bite = { afterMs: Date.now() - t0, what: what.join('; ') };
          return;
        }
        await sleep(250);
      }
    },
    observe: async (rig) => {
      const s = seen();
      const r = await readyz(rig);
      const died = rig.mariadb!.proc.running ? '' : ` MariaDB died: ${crashLine(logs[0]!.file, logs[0]!.offset)}.`;
      if (!bite) {
        return { bit: false, note: `did not bite within ${BITE_WITHIN_MS / 1000} s (readyz ${r.status}).${died}` };
      }
      return {
        bit: true,
        note:
          `bit ${bite.afterMs} ms after the disk was full: ${bite.what}. At the end of the hold: readyz ${r.status} ` +
          `${JSON.stringify(r.reasons ?? [])}, ${s.mariadb.length} MariaDB and ${s.pluginServer.length} ` +
          `plugin-server log lines naming a full disk.${died}`,
      };
    },
    recover: async (rig) => {
      rmSync(join(rig.mariadb!.datadir, BALLAST), { force: true });
      // InnoDB aborts when it cannot write a rollback (seen: "[FATAL] InnoDB: Error (Out of disk space) in
      // rollback", signal 6). A production MariaDB runs under a supervisor that starts it again (crash recovery);
      // the rig plays that part, so what is measured is the plugin-server getting over it.
      if (!rig.mariadb!.proc.running) await rig.mariadb!.restart();
    },
  };
}
