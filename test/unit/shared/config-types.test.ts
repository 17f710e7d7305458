import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAgentConfig } from '../../../src/agent/config.js';
import { parsePluginServerConfig } from '../../../src/plugin-server/config.js';
// @ts-expect-error: a plain ESM script without types (scripts/ is not compiled)
import { sharedDefinitions, withDefaultsRequired } from '../../../scripts/schema-types.mjs';

type Schema = {
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  $ref?: string;
  allOf?: Schema[];
};

const schemaFile = (file: string): Schema =>
  JSON.parse(readFileSync(fileURLToPath(new URL(`../../../schemas/${file}`, import.meta.url)), 'utf8')) as Schema;

/** The keys a generated "after defaults" type says are always there, missing from `value`, as JSON paths. */
function missingRequired(schema: Schema, file: Schema, value: unknown, path = ''): string[] {
  let s = schema;
  let f = file;
  if (s.$ref) {
    const [other, pointer = ''] = s.$ref.split('#');
    if (other) f = withDefaultsRequired(schemaFile(other)) as Schema;
    s = pointer
      .split('/')
      .filter(Boolean)
      .reduce((o, k) => (o as Record<string, Schema>)[k] as Schema, f);
  }
  if (typeof value !== 'object' || value === null) return [];
  const out: string[] = [];
  for (const member of s.allOf ?? []) out.push(...missingRequired(member, f, value, path));
  if (Array.isArray(value)) {
    if (s.items) value.forEach((v, i) => out.push(...missingRequired(s.items!, f, v, `${path}/${i}`)));
    return out;
  }
  const obj = value as Record<string, unknown>;
  for (const key of s.required ?? []) if (!(key in obj)) out.push(`${path}/${key}`);
  for (const [key, child] of Object.entries(s.properties ?? {})) {
    if (key in obj) out.push(...missingRequired(child, f, obj[key], `${path}/${key}`));
  }
  return out;
}

describe('config types generated from schemas/', () => {
  it('src/shared/config-types matches schemas/ (npm run schema:check)', () => {
    const out = execFileSync('node', ['scripts/schema-types.mjs', '--check'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(out).toContain('matches schemas/');
  }, 120_000);

  // The generated types of the runtime configs mark every defaulted key as present: true only if the loader fills in
  // every default the schema declares, including those of the account options another file holds.
  it('every key the agent config type says is there after loading, is there', () => {
    const config = parseAgentConfig('/etc/agent.yaml', 'kubernetes: {accounts: [{name: a, serviceAccount: true}]}', {});
    const schema = withDefaultsRequired(schemaFile('agent-config.schema.json')) as Schema;
    expect(config.kubernetes.accounts[0]).toMatchObject({ namespaces: [], onlySpinnakerManaged: false });
    expect(missingRequired(schema, schema, config)).toEqual([]);
  });

  // agent-config.ts imports the account options from account-options.ts and requires the keys sharedDefinitions()
  // lists: exactly those the loader fills in for an account that declares none of them.
  it('the account options the agent config type requires are the ones its loader fills in', () => {
    const config = parseAgentConfig('/etc/agent.yaml', 'kubernetes: {accounts: [{name: a, kubeconfigFile: /k}]}', {});
    const filled = Object.keys(config.kubernetes.accounts[0]!).filter((k) => k !== 'name' && k !== 'kubeconfigFile');
    const shared = sharedDefinitions() as { name: string; defaulted: string[] }[];
    expect(shared.find((d) => d.name === 'AgentAccountOptions')?.defaulted).toEqual(filled.sort());
    expect(shared.find((d) => d.name === 'AccountOptions')?.defaulted).toEqual(
      filled.filter((k) => k !== 'onlyNamespacedResources'),
    );
  });

  it('every key the plugin-server config type says is there after loading, is there', () => {
    const config = parsePluginServerConfig('{}');
    const schema = withDefaultsRequired(schemaFile('plugin-server-config.schema.json')) as Schema;
    expect(missingRequired(schema, schema, config)).toEqual([]);
  });
});
