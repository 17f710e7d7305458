import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

export interface WatchedFilesOptions {
  /** How often the files are read even without a change event (file systems without inotify). Default 10 s. */
  pollMs?: number;
  /** Quiet time after the last event before reading, so a burst of events (a swap) gives one read. Default 200 ms. */
  debounceMs?: number;
}

/**
 * Calls back with the contents of a set of files when any of them changes. It watches the files' directories, not
 * the files: a ConfigMap or Secret volume replaces its files by atomically swapping the `..data` symlink, which a
 * watch on the old file's inode never sees. Events only trigger a read; the contents decide (by digest), so
 * touch-only events and duplicate notifications never call back. A slow poll covers file systems without change
 * events. A file that cannot be read (mid-swap, briefly missing) skips that round; the next event or poll reads
 * it again.
 */
export class WatchedFiles {
  private readonly watchers: FSWatcher[] = [];
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private last: string | undefined;
  private checking: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly files: readonly string[],
    private readonly onChange: (contents: Buffer[]) => void,
    private readonly options: WatchedFilesOptions = {},
  ) {}

  /** `initial` is the content already loaded, so the first check does not report it again. */
  start(initial: readonly (Buffer | string)[] | undefined): void {
    this.last = initial ? digest(initial) : undefined;
    const names = new Map<string, Set<string>>();
    for (const f of this.files) {
      const set = names.get(dirname(f)) ?? new Set<string>();
      set.add(basename(f));
      names.set(dirname(f), set);
    }
    for (const [dir, watched] of names) {
      try {
        const w = watch(dir, { persistent: false }, (_event, changed) => {
          // Any `..` entry may be the ..data symlink or the directory it points to; other files' noise is skipped.
          if (changed && !watched.has(changed) && !changed.startsWith('..')) return;
          this.schedule();
        });
        w.on('error', () => undefined);
        this.watchers.push(w);
      } catch {
        // no inotify (or the directory is gone): the poll still works
      }
    }
    this.poll = setInterval(() => void this.check(), this.options.pollMs ?? 10_000);
    this.poll.unref();
  }

  stop(): void {
    this.stopped = true;
    for (const w of this.watchers) w.close();
    clearInterval(this.poll);
    clearTimeout(this.debounce);
  }

  /** Reads the files now (as an event would); resolves once that read and its callback are done. */
  check(): Promise<void> {
    if (this.checking) {
      // An event during a read may mean the read saw the old contents: read once more afterwards.
      this.again = true;
      return this.checking;
    }
    this.checking = this.read().finally(() => {
      this.checking = undefined;
      if (this.again && !this.stopped) {
        this.again = false;
        void this.check();
      }
    });
    return this.checking;
  }

  private schedule(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => void this.check(), this.options.debounceMs ?? 200);
    this.debounce.unref();
  }

  private async read(): Promise<void> {
    let contents: Buffer[];
    try {
      contents = await Promise.all(this.files.map((f) => readFile(f)));
    } catch {
      return;
    }
    const d = digest(contents);
    if (d === this.last || this.stopped) return;
    this.last = d;
    this.onChange(contents);
  }
}

function digest(contents: readonly (Buffer | string)[]): string {
  const h = createHash('sha256');
  for (const c of contents) {
    const b = typeof c === 'string' ? Buffer.from(c) : c;
    // Length-prefixed, so moving bytes from one file to the next is a change.
    h.update(String(b.length)).update(':').update(b);
  }
  return h.digest('hex');
}
