import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest global setup, first in each project's list: the run's temp files go into a directory of its own, through
 * TMPDIR, which `os.tmpdir()`, the Go binaries and MariaDB all honour and which the forked workers inherit; teardown
 * removes it. Before this, each `npm test` left some 180 directories and 700 MB in the system's temp directory
 * (certificates, kubeconfigs, server data), and a developer's /tmp filled up run by run.
 *
 * Each project gets its own directory, directly under the system's temp directory (never one inside another), so
 * whichever project vitest tears down first cannot remove what the other still uses: within a project teardown
 * runs in reverse, after that project's servers are stopped. Workers inherit the TMPDIR of the project set up last.
 * A run that is killed leaves its directories (`scale-agent-test-run-*`) for a human to look at or remove.
 */
export default function setup(): () => void {
  const system = (process.env.SCALE_AGENT_TEST_SYSTEM_TMPDIR ??= tmpdir());
  const root = mkdtempSync(join(system, 'scale-agent-test-run-'));
  process.env.TMPDIR = root;
  return () => rmSync(root, { recursive: true, force: true });
}
