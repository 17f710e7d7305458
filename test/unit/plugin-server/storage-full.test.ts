/**
 * Which database errors mean "out of space", and how long readiness reports one (an injected clock: the window is
 * the rule under test, not a timing).
 */
import { describe, expect, it } from 'vitest';
import { isStorageFull, StorageFullSignal } from '../../../src/plugin-server/storage-full.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';

const tableFull = Object.assign(new Error("The table 'sa_tasks' is full"), {
  errno: 1114,
  code: 'ER_RECORD_FILE_FULL',
});

describe('storage full', () => {
  it('recognises MariaDB’s full-table and full-disk errors, also wrapped, and nothing else', () => {
    expect(isStorageFull(tableFull)).toBe(true);
    expect(isStorageFull(Object.assign(new Error('Disk full (/tmp/x)'), { errno: 1021 }))).toBe(true);
    expect(isStorageFull(new Error('Error writing file \'./db/t.ibd\' (errno: 28 "No space left on device")'))).toBe(
      true,
    );
    expect(isStorageFull(new ScaleAgentError('UNAVAILABLE', 'MySQL store write failed', { cause: tableFull }))).toBe(
      true,
    );
    expect(isStorageFull(Object.assign(new Error('Connection lost'), { code: 'PROTOCOL_CONNECTION_LOST' }))).toBe(
      false,
    );
    expect(isStorageFull(Object.assign(new Error('Deadlock found'), { errno: 1213 }))).toBe(false);
    expect(isStorageFull(undefined)).toBe(false);
  });

  it('recognises PostgreSQL’s disk_full, also wrapped, and not its other errors', () => {
    // As node-postgres reports a relation that cannot grow (md.c: errcode_for_file_access maps ENOSPC to 53100).
    const diskFull = Object.assign(new Error('could not extend file "base/16384/16385": No space left on device'), {
      code: '53100',
      severity: 'ERROR',
    });
    expect(isStorageFull(diskFull)).toBe(true);
    expect(
      isStorageFull(new ScaleAgentError('UNAVAILABLE', 'PostgreSQL store write failed', { cause: diskFull })),
    ).toBe(true);
    expect(isStorageFull(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBe(false);
  });

  it('reports a refused write until none has been refused for the window', () => {
    let now = 1_000_000;
    const signal = new StorageFullSignal(() => now, 10_000);
    expect(signal.reason()).toBeUndefined();
    // Other errors are passed through and not noted.
    const lost = new Error('Connection lost');
    expect(signal.noted(lost)).toBe(lost);
    expect(signal.reason()).toBeUndefined();
    expect(signal.noted(tableFull)).toBe(tableFull);
    now += 4_000;
    expect(signal.reason()).toBe("out of space: a write was refused 4 s ago (The table 'sa_tasks' is full)");
    now += 6_000;
    expect(signal.reason()).toBeDefined();
    now += 1;
    expect(signal.reason()).toBeUndefined();
  });
});
