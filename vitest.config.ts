import { defineConfig } from 'vitest/config';

// Three projects: `unit` (pure, seconds), `integration` (real control plane, MariaDB and processes, started
// once per run by test/infra/global-setup.ts and shared; tests isolate themselves by namespace/database) and
// `real-node` (a real kubelet, containerd and pods on this machine: one node per machine, so its files run one at a
// time, after the other two, each starting and stopping its own node). Each project's temp files go into a
// directory of its own that is removed after the run (test/infra/temp-root.ts).
export default defineConfig({
  test: {
    pool: 'forks',
    reporters: ['default', './test/infra/summary-reporter.ts'],
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], globalSetup: ['test/infra/temp-root.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'integration',
          // Real processes on 2 shared cores: starting an agent and waiting for its sync can take tens of seconds
          // when other test files run next to it.
          testTimeout: 120_000,
          include: ['test/integration/**/*.test.ts', 'test/e2e/**/*.test.ts'],
          exclude: ['test/e2e/real-node/**'],
          globalSetup: ['test/infra/temp-root.ts', 'test/infra/global-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'real-node',
          include: ['test/e2e/real-node/**/*.test.ts'],
          maxWorkers: 1,
          // After unit and integration: vitest runs projects of one group together, and they must share one
          // worker count.
          sequence: { groupOrder: 1 },
          testTimeout: 180_000,
          hookTimeout: 600_000,
          globalSetup: ['test/infra/temp-root.ts'],
        },
      },
    ],
  },
});
