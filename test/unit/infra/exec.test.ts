import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../infra/exec.js';
import { ServerProcess } from '../../infra/processes-group.js';

// The child-process plumbing of the harness must never raise an unhandled error: vitest counts one as a failed
// run even when every test passed (a fresh machine's CI went red on `write EPIPE` from exec.ts).
describe('test harness child processes', () => {
  it('a child that exits without reading its stdin gives its result, not EPIPE', async () => {
    // 8 MiB is far more than a pipe buffer, so the write is still going when the child has gone.
    const big = 'x'.repeat(8 * 1024 * 1024);
    for (let i = 0; i < 5; i++) {
      const r = await run('sh', ['-c', 'exit 3'], { input: big, allowFail: true });
      expect(r.code).toBe(3);
    }
  });

  it('a program that does not exist rejects with its name', async () => {
    await expect(run('/nonexistent/scale-agent-test-binary', [])).rejects.toThrow(
      /\/nonexistent\/scale-agent-test-binary: spawn .*ENOENT/,
    );
  });

  it('a server process whose binary does not exist reports that it could not start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sa-proc-'));
    const p = ServerProcess.start('ghost', '/nonexistent/ghost-server', [], join(dir, 'ghost.log'));
    await new Promise((r) => setTimeout(r, 200));
    expect(p.running).toBe(false);
    expect(() => p.assertRunning()).toThrow(/ghost could not start: spawn .*ENOENT/);
    await p.stop(100);
  });
});
