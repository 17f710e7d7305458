/**
 * Benchmarks time the processes users run: the built code (`dist/`, `bin/run.js`), not the test loader, which
 * compiles TypeScript on the fly, keeps its own caches and maps stack traces back to the source. A benchmark that
 * starts the agent or plugin-server through test/infra/processes.ts calls this first. It does not build: `npm test`
 * builds once before its benchmarks' smoke run, and a build replacing dist/ under running tests would break them.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './child.js';
import { progress } from './report.js';

export function useShippedBuild(): void {
  const built = join(repoRoot, 'dist/src/cli/commands/agent.js');
  const manifest = join(repoRoot, 'oclif.manifest.json');
  if (!existsSync(built) || !existsSync(manifest)) {
    throw new Error(`${built} or ${manifest} is missing: run \`npm run build\` first (benchmarks run the built code)`);
  }
  const builtAt = statSync(built).mtimeMs;
  const newer = readdirSync(join(repoRoot, 'src'), { recursive: true, withFileTypes: true }).find(
    (e) => e.isFile() && e.name.endsWith('.ts') && statSync(join(e.parentPath, e.name)).mtimeMs > builtAt,
  );
  if (newer) {
    progress(`warning: ${join(newer.parentPath, newer.name)} is newer than dist/: run \`npm run build\` to measure it`);
  }
  process.env.SCALE_AGENT_TEST_USE_DIST = '1';
}
