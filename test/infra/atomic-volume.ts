import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A directory laid out as kubelet lays out a ConfigMap or Secret volume: each file is a symlink `name →
 * ..data/name`, `..data` a symlink to a `..<timestamp>` directory holding this version's files. publish() writes
 * a new version the way kubelet's atomic writer does (new directory, `..data_tmp` symlink renamed over `..data`,
 * old directory removed), so a reader never sees a mix of versions and a watch on a file's inode never fires.
 */
export class AtomicVolume {
  private version = 0;
  private current: string | undefined;
  private readonly names = new Set<string>();

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
  }

  /** Path of a file in the volume (a symlink through ..data once published). */
  path(name: string): string {
    return join(this.dir, name);
  }

  publish(files: Record<string, string | Buffer>): void {
    const name = `..2026_11_22_${String(++this.version).padStart(4, '0')}`;
    mkdirSync(join(this.dir, name));
    for (const [file, content] of Object.entries(files)) writeFileSync(join(this.dir, name, file), content);
    symlinkSync(name, join(this.dir, '..data_tmp'));
    renameSync(join(this.dir, '..data_tmp'), join(this.dir, '..data'));
    if (this.current) rmSync(join(this.dir, this.current), { recursive: true });
    this.current = name;
    for (const file of Object.keys(files)) {
      if (this.names.has(file)) continue;
      symlinkSync(`..data/${file}`, join(this.dir, file));
      this.names.add(file);
    }
  }
}
