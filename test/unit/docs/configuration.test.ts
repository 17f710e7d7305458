import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script without types (scripts/ is not compiled)
import { render, renderIndex, SCHEMAS } from '../../../scripts/config-docs.mjs';

const page = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../../../docs/configuration/${name}`, import.meta.url)), 'utf8');
const schema = (file: string) =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`../../../schemas/${file}`, import.meta.url)), 'utf8')) as {
    properties: Record<string, unknown>;
  };

describe('docs/configuration', () => {
  it.each(SCHEMAS as { file: string; page: string }[])('$page is generated from $file (npm run docs:gen)', (entry) => {
    expect(page(entry.page), 'out of date: run npm run docs:gen').toBe(render(entry));
    // Every top-level key of the schema has its row.
    for (const key of Object.keys(schema(entry.file).properties)) expect(page(entry.page)).toContain(`| \`${key}\` |`);
  });

  it('the index lists every page', () => {
    expect(page('README.md')).toBe(renderIndex());
  });
});
