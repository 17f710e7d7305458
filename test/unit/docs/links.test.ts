import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = resolve(fileURLToPath(new URL('../../..', import.meta.url)));
const tracked = execFileSync('git', ['ls-files'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean);

// A clone holds only the repository: what a user or maintainer needs must be in it (docs/), not cited from files
// that live beside it in the authors' workspace.
describe('the repository stands alone', () => {
  it('no tracked file cites design notes or references outside the repository', () => {
    const outside =
      /\.\.\/shared\/(DESIGN|STYLE|reference)|shared\/reference\/|\bDESIGN\.md\b|\bSTYLE\.md\b|\breference\/[a-z-]+\.md\b/;
    const hits = tracked
      .filter(
        (f) => existsSync(join(root, f)) && !f.endsWith('package-lock.json') && f !== 'test/unit/docs/links.test.ts',
      )
      .flatMap((f) =>
        readFileSync(join(root, f), 'utf8')
          .split('\n')
          .map((line, i) => (outside.test(line) ? `${f}:${i + 1}: ${line.trim()}` : ''))
          .filter(Boolean),
      );
    expect(hits).toEqual([]);
  });

  it('every relative link in README.md and docs/ points at a file that exists', () => {
    const pages = tracked.filter((f) => f === 'README.md' || (f.startsWith('docs/') && f.endsWith('.md')));
    expect(pages).toContain('docs/architecture.md');
    const broken: string[] = [];
    for (const page of pages) {
      const text = readFileSync(join(root, page), 'utf8');
      for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
        const target = m[1]!;
        if (/^[a-z]+:/.test(target)) continue;
        if (!existsSync(join(root, dirname(page), target))) broken.push(`${page}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
