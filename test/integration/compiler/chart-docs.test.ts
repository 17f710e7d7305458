import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { helmDocs } from '../../infra/index.js';

const root = fileURLToPath(new URL('../../..', import.meta.url));
const readme = fileURLToPath(new URL('../../../charts/scale-agent/README.md', import.meta.url));

// The chart's README is what the real helm-docs renders from values.yaml's `# --` comments: it cannot drift from the
// values, and a value added without a description shows up here instead of silently in the table.
describe('charts/scale-agent/README.md', () => {
  it('is what helm-docs renders from values.yaml (npm run chart:docs), and documents every value', async () => {
    const { stdout } = await helmDocs(
      ['--chart-search-root', 'charts', '--sort-values-order', 'file', '--log-level', 'warning', '--dry-run'],
      { cwd: root },
    );
    expect(readFileSync(readme, 'utf8'), 'out of date: run npm run chart:docs').toBe(stdout);
    const rows = stdout.split('\n').filter((l) => /^\| [a-zA-Z]/.test(l));
    expect(rows.length).toBeGreaterThan(20);
    const undocumented = rows.filter((r) => (r.split('|')[4] ?? '').trim() === '').map((r) => r.split('|')[1]!.trim());
    expect(undocumented).toEqual([]);
  });
});
