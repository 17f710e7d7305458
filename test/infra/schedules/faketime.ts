/**
 * A process's wall clock, skewed while it runs: Debian's libfaketime (scripts/test-deps.sh installs it) preloaded into
 * the process, reading its offset from a file, so a test steps one replica's clock by ±30 s (as a bad NTP step would)
 * and back without restarting it. Node reads the wall clock through clock_gettime(CLOCK_REALTIME), which libfaketime
 * intercepts; the monotonic clock that libuv's timers run on is left alone (FAKETIME_DONT_FAKE_MONOTONIC), so timers,
 * intervals and performance.now() keep real time and only Date and what is computed from it move.
 */
import { existsSync, renameSync, writeFileSync } from 'node:fs';
import { arch } from 'node:os';
import { join } from 'node:path';

const MULTIARCH: Record<string, string> = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

/** Where Debian's libfaketime package puts the library, or an error saying how to get it. */
export function libfaketimePath(): string {
  const path = `/usr/lib/${MULTIARCH[arch()] ?? `${arch()}-linux-gnu`}/faketime/libfaketime.so.1`;
  if (!existsSync(path)) {
    throw new Error(`${path} not found; run scripts/test-deps.sh (installs libfaketime from Debian's packages)`);
  }
  return path;
}

/** One process's clock offset, in a file the preloaded library re-reads about once a second. */
export class ClockSkew {
  private current = 0;

  constructor(readonly file: string) {
    this.write(0);
  }

  static in(dir: string, name: string): ClockSkew {
    return new ClockSkew(join(dir, `${name}.faketime`));
  }

  /** The environment that makes a process follow this file (pass it on every start). */
  env(): Record<string, string> {
    return {
      LD_PRELOAD: libfaketimePath(),
      FAKETIME_TIMESTAMP_FILE: this.file,
      // Seconds between re-reads of the file: a step takes effect within this (the default is 10).
      FAKETIME_CACHE_DURATION: '1',
      FAKETIME_DONT_FAKE_MONOTONIC: '1',
    };
  }

  get seconds(): number {
    return this.current;
  }

  /** The offset from real time, in seconds (negative: behind). */
  set(seconds: number): void {
    this.write(seconds);
  }

  private write(seconds: number): void {
    this.current = seconds;
    // libfaketime's relative form: "+30s", "-30s", "+0".
    const spec = seconds === 0 ? '+0' : `${seconds > 0 ? '+' : '-'}${Math.abs(seconds)}s`;
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, `${spec}\n`);
    // Atomic: the library never reads a half-written offset.
    renameSync(tmp, this.file);
  }
}
