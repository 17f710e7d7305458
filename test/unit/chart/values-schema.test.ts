/**
 * charts/scale-agent/values.yaml and values.schema.json describe the same values: every key of values.yaml is in the
 * schema with the type it has there, and every key the schema knows is in values.yaml (where helm-docs documents it)
 * unless it is listed below as optional, with why, and the chart's README mentions it.
 */
import { readFileSync } from 'node:fs';
import _Ajv from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

const Ajv = _Ajv as unknown as typeof _Ajv.default;

const chart = (f: string) => new URL(`../../../charts/scale-agent/${f}`, import.meta.url);
const values = parse(readFileSync(chart('values.yaml'), 'utf8')) as Record<string, unknown>;
const schema = JSON.parse(readFileSync(chart('values.schema.json'), 'utf8')) as Node;
const readme = readFileSync(chart('README.md'), 'utf8');

interface Node {
  type?: string | string[];
  enum?: unknown[];
  properties?: Record<string, Node>;
  additionalProperties?: boolean | Node;
  items?: Node;
}

/**
 * Schema keys values.yaml leaves out on purpose (`*` is any component). Absence is meaningful for the first two; the
 * TLS shapes only apply with their `tls.source`, and values.yaml's `tls` comment lists them.
 */
const OPTIONAL: Record<string, string> = {
  global: "Helm's own, set by parent charts",
  '*.topologySpreadConstraints': 'absent selects the default spread for more than one replica',
  '*.podDisruptionBudget.enabled': 'absent selects a budget for more than one replica',
  '*.tls.secret.caCert': 'tls.source secret only',
  '*.tls.secret.cert': 'tls.source secret only',
  '*.tls.secret.key': 'tls.source secret only',
  '*.tls.certManager.issuerRef': 'tls.source cert-manager only',
  '*.tls.certManager.commonName': 'tls.source cert-manager only',
  '*.tls.certManager.dnsNames': 'tls.source cert-manager only',
  '*.tls.certManager.uris': 'tls.source cert-manager only',
  '*.tls.certManager.duration': 'tls.source cert-manager only',
};

function optional(path: string): boolean {
  return Object.keys(OPTIONAL).some((p) => p === path || (p.startsWith('*.') && path.endsWith(p.slice(1))));
}

function typeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function typeMatches(node: Node, v: unknown): boolean {
  if (node.enum) return node.enum.includes(v);
  if (node.type === undefined) return true;
  const types = Array.isArray(node.type) ? node.type : [node.type];
  const t = typeOf(v);
  return types.includes(t) || (t === 'integer' && types.includes('number'));
}

/** values.yaml keys missing from the schema or typed otherwise there. */
function valuesNotInSchema(node: Node, v: unknown, path: string, out: string[]): string[] {
  if (!typeMatches(node, v))
    out.push(`${path || '(root)'}: ${typeOf(v)} in values.yaml, schema says ${JSON.stringify(node.type ?? node.enum)}`);
  if (typeOf(v) !== 'object') return out;
  for (const [k, child] of Object.entries(v as Record<string, unknown>)) {
    const p = path ? `${path}.${k}` : k;
    const sub =
      node.properties?.[k] ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined);
    if (sub) valuesNotInSchema(sub, child, p, out);
    else if (node.properties || node.additionalProperties === false) out.push(`${p}: not in the schema`);
  }
  return out;
}

/** Schema keys values.yaml lacks. */
function schemaNotInValues(node: Node, v: unknown, path: string, out: string[]): string[] {
  for (const [k, child] of Object.entries(node.properties ?? {})) {
    const p = path ? `${path}.${k}` : k;
    const present = typeOf(v) === 'object' && k in (v as Record<string, unknown>);
    if (!present) out.push(p);
    else schemaNotInValues(child, (v as Record<string, unknown>)[k], p, out);
  }
  return out;
}

describe('charts/scale-agent values.yaml and values.schema.json', () => {
  it('values.yaml validates against the schema', () => {
    const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);
    expect(validate(values), JSON.stringify(validate.errors)).toBe(true);
  });

  it('every key of values.yaml is in the schema, with its type', () => {
    expect(valuesNotInSchema(schema, values, '', [])).toEqual([]);
  });

  it('every key of the schema is in values.yaml, or optional on purpose and in the README', () => {
    const missing = schemaNotInValues(schema, values, '', []);
    expect(missing.filter((p) => !optional(p))).toEqual([]);
    for (const p of missing) expect(readme, p).toMatch(new RegExp(`[\`.]${p.split('.').at(-1)!}\\b`));
    // The list has no stale entry: each pattern stands for a key values.yaml lacks.
    for (const pattern of Object.keys(OPTIONAL)) {
      expect(
        missing.some((p) => p === pattern || (pattern.startsWith('*.') && p.endsWith(pattern.slice(1)))),
        pattern,
      ).toBe(true);
    }
  });

  it('the checks have teeth: a misspelt or mistyped key and an unlisted schema key are reported', () => {
    const bad = { ...values, pluginServer: { ...(values.pluginServer as object), replicas: '2', enabeld: true } };
    expect(valuesNotInSchema(schema, bad, '', []).sort()).toEqual([
      'pluginServer.enabeld: not in the schema',
      'pluginServer.replicas: string in values.yaml, schema says "integer"',
    ]);
    const { image: _image, ...noImage } = values;
    expect(schemaNotInValues(schema, noImage, '', []).filter((p) => !optional(p))).toEqual(['image']);
  });
});
