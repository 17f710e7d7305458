import { defineConfig } from 'vitest/config';

// Two projects: `unit` (pure, seconds) and `integration` (real control plane, MariaDB and processes, started
// once per run by test/infra/global-setup.ts and shared; tests isolate themselves by namespace/database). Each
// project's temp files go into a directory of its own that is removed after the run (test/infra/temp-root.ts).
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
          globalSetup: ['test/infra/temp-root.ts', 'test/infra/global-setup.ts'],
        },
      },
    ],
  },
});
