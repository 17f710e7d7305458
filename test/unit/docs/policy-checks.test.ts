/**
 * docs/policy-checks.md documents every rule `scale-agent check` runs, with the id, name and severity the code gives
 * it, and no rule the code does not have.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { POLICY_RULES } from '../../../src/compiler/index.js';

const page = readFileSync(new URL('../../../docs/policy-checks.md', import.meta.url), 'utf8');

describe('docs/policy-checks.md', () => {
  it('has one table row per rule, as the code names it', () => {
    const rows = [...page.matchAll(/^\| (SA\d{3}) \| `([a-z-]+)` \| (error|warning) \|/gm)].map((m) => ({
      id: m[1],
      name: m[2],
      severity: m[3],
    }));
    expect(rows).toEqual(POLICY_RULES.map((r) => ({ id: r.id, name: r.name, severity: r.severity })));
  });
});
