/**
 * ClockSkew (test/infra/schedules/faketime.ts) on a real Node process: Debian's libfaketime, preloaded, moves the
 * wall clock the process sees by the offset in its file, stepped while it runs, while timers and performance.now()
 * keep real time (the monotonic clock is left alone). The randomized schedules rely on both halves: a replica whose
 * Date is 30 s off, whose timers (lease renewals, heartbeats) still fire on time.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';
import { ClockSkew } from '../../infra/schedules/faketime.js';

// Prints its wall clock and its monotonic clock every 200 ms (setInterval runs on the monotonic clock).
const CHILD = 'setInterval(() => console.log(JSON.stringify({ now: Date.now(), mono: performance.now() })), 200)';

describe('ClockSkew', () => {
  it("steps a running Node process's wall clock by +30 s and -30 s; its timers keep real time", async () => {
    const skew = ClockSkew.in(mkdtempSync(join(tmpdir(), 'sa-faketime-')), 'child');
    const child = spawn(process.execPath, ['-e', CHILD], {
      env: { ...process.env, ...skew.env() },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
      const monos: number[] = [];
      /** Reads lines until the child's wall clock is `want` seconds off this process's (which is real). */
      const until = async (want: number) => {
        for (;;) {
          const next = await lines.next();
          if (next.done) throw new Error('the child exited');
          const { now, mono } = JSON.parse(next.value) as { now: number; mono: number };
          monos.push(mono);
          if (Math.round((now - Date.now()) / 1000) === want) return;
        }
      };
      await until(0);
      skew.set(30);
      await until(30);
      skew.set(-30);
      await until(-30);
      skew.set(0);
      await until(0);
      // The monotonic clock moved on steadily through the ±30 s steps: no gap between two ticks anywhere near them.
      const gaps = monos.slice(1).map((m, i) => m - monos[i]!);
      expect(Math.min(...gaps)).toBeGreaterThan(0);
      expect(Math.max(...gaps)).toBeLessThan(25_000);
    } finally {
      child.kill('SIGKILL');
    }
  });
});
