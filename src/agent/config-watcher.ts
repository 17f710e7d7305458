import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { basename, dirname } from 'node:path';

/**
 * Calls back when the config file's content changes. It watches the file's directory, not the file: a ConfigMap
 * volume replaces its files by atomically swapping the `..data` symlink, which a watch on the old file never
 * sees. Events only trigger a re-read; the content decides, so touch-only events and duplicate notifications
 * never reload. A slow poll covers file systems without change events.
 */
export class ConfigWatcher {
  private watcher: FSWatcher | undefined;
  private poll: NodeJS.Timeout | undefined;
  private debounce: NodeJS.Timeout | undefined;
  private last: string | undefined;
  private checking = false;

  constructor(
    private readonly file: string,
    private readonly onChange: (text: string) => void,
    private readonly options: { pollMs?: number; debounceMs?: number } = {},
  ) {}

  /** `initial` is the content already loaded, so the first check does not report it again. */
  start(initial: string | undefined): void {
    this.last = initial;
    const dir = dirname(this.file);
    const name = basename(this.file);
    try {
      this.watcher = watch(dir, { persistent: false }, (_event, changed) => {
        // Any entry may be the ..data symlink or the directory it points to; only other files' noise is skipped.
        if (changed && changed !== name && !changed.startsWith('..')) return;
        this.schedule();
      });
      this.watcher.on('error', () => undefined);
    } catch {
      // no inotify (or the directory is gone): the poll still works
    }
    this.poll = setInterval(() => void this.check(), this.options.pollMs ?? 10_000);
    this.poll.unref();
  }

  stop(): void {
    this.watcher?.close();
    clearInterval(this.poll);
    clearTimeout(this.debounce);
  }

  private schedule(): void {
    clearTimeout(this.debounce);
    this.debounce = setTimeout(() => void this.check(), this.options.debounceMs ?? 200);
    this.debounce.unref();
  }

  private async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const text = await readFile(this.file, 'utf8');
      if (text !== this.last) {
        this.last = text;
        this.onChange(text);
      }
    } catch {
      // mid-swap or briefly missing: the next event or poll reads it again
    } finally {
      this.checking = false;
    }
  }
}
