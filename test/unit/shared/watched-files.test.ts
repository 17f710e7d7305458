import { mkdtempSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WatchedFiles } from '../../../src/shared/watched-files.js';
import { AtomicVolume } from '../../infra/atomic-volume.js';

const watchers: WatchedFiles[] = [];
afterEach(() => {
  for (const w of watchers.splice(0)) w.stop();
});

function setUp(pollMs = 3_600_000) {
  const volume = new AtomicVolume(mkdtempSync(join(tmpdir(), 'watched-files-')));
  volume.publish({ 'tls.crt': 'cert-1', 'tls.key': 'key-1' });
  const seen: string[][] = [];
  let notify: (() => void) | undefined;
  const files = [volume.path('tls.crt'), volume.path('tls.key')];
  const w = new WatchedFiles(
    files,
    (contents) => {
      seen.push(contents.map(String));
      notify?.();
    },
    { pollMs, debounceMs: 10 },
  );
  watchers.push(w);
  w.start(['cert-1', 'key-1']);
  const next = () => new Promise<void>((resolve) => (notify = resolve));
  return { volume, files, seen, w, next };
}

describe('WatchedFiles', () => {
  it('reports a ..data symlink swap once, with every file of the new version', async () => {
    const { volume, seen, next } = setUp();
    const changed = next();
    volume.publish({ 'tls.crt': 'cert-2', 'tls.key': 'key-2' });
    await changed;
    expect(seen).toEqual([['cert-2', 'key-2']]);
  });

  it('a read without a change reports nothing (touch, the initial contents); a changed file is reported', async () => {
    const { volume, files, seen, w } = setUp();
    utimesSync(files[0] as string, new Date(), new Date());
    await w.check();
    expect(seen).toEqual([]);
    volume.publish({ 'tls.crt': 'cert-1', 'tls.key': 'key-3' });
    await w.check();
    expect(seen).toEqual([['cert-1', 'key-3']]);
    await w.check();
    expect(seen).toHaveLength(1);
  });

  it('moving bytes from one file to the next is a change', async () => {
    const { volume, seen, w } = setUp();
    volume.publish({ 'tls.crt': 'cert-1k', 'tls.key': 'ey-1' });
    await w.check();
    expect(seen).toEqual([['cert-1k', 'ey-1']]);
  });
});
