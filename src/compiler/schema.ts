import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import _Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import _addFormats from 'ajv-formats';
import type { ErrorDetail } from '../shared/errors.js';
import type { LoadedYaml } from './load.js';
import { packageRoot } from './_package-root.js';

// ajv and ajv-formats are CommonJS with a `default` export; under NodeNext the default import is the module object.
const Ajv2020 = _Ajv2020 as unknown as typeof _Ajv2020.default;
const addFormats = _addFormats as unknown as typeof _addFormats.default;

const validators = new Map<string, ValidateFunction>();

/** A compiled validator for `schemas/<name>.schema.json`, compiled once per process. */
export function schemaValidator(name: string): ValidateFunction {
  let v = validators.get(name);
  if (!v) {
    const schema = JSON.parse(readFileSync(join(packageRoot(), 'schemas', `${name}.schema.json`), 'utf8')) as object;
    const ajv = new Ajv2020({
      allErrors: true,
      strict: true,
      verbose: true,
      discriminator: true,
      allowUnionTypes: true,
    });
    addFormats(ajv);
    v = ajv.compile(schema);
    validators.set(name, v);
  }
  return v;
}

const DNS_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';

/** Turns ajv's errors into located details, dropping the noise ajv adds around failed `oneOf`/`if` branches. */
export function schemaErrors(errors: ErrorObject[], src: LoadedYaml): ErrorDetail[] {
  const out: ErrorDetail[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (e.keyword === 'oneOf' || e.keyword === 'if' || e.keyword === '$ref') continue;
    let path = e.instancePath;
    let key = false;
    let message: string;
    const p = e.params as Record<string, unknown>;
    switch (e.keyword) {
      case 'additionalProperties':
        path = `${path}/${escapePointer(String(p.additionalProperty))}`;
        key = true;
        message = `unknown property '${String(p.additionalProperty)}'`;
        break;
      case 'required':
        message = `missing required property '${String(p.missingProperty)}'`;
        break;
      case 'enum':
        message = `must be one of: ${(p.allowedValues as unknown[]).map((x) => JSON.stringify(x)).join(', ')}`;
        break;
      case 'const':
        message = `must be ${JSON.stringify(p.allowedValue)}`;
        break;
      case 'pattern':
        message =
          p.pattern === DNS_LABEL
            ? "must be a Kubernetes name: lowercase letters, digits and '-', starting and ending with a letter or digit"
            : `must match ${String(p.pattern)}`;
        break;
      case 'discriminator':
        message =
          p.error === 'mapping'
            ? `must be one of: ${discriminatorValues(e, String(p.tag))}`
            : `'${String(p.tag)}' must be a string`;
        if (p.error === 'mapping') path = `${path}/${String(p.tag)}`;
        break;
      case 'uniqueItems':
        message = `must not contain duplicates (items ${String(p.j)} and ${String(p.i)} are equal)`;
        break;
      default:
        message = e.message ?? e.keyword;
    }
    const id = `${path}\u0000${message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(src.detail(path, message, { key }));
  }
  return out;
}

function discriminatorValues(e: ErrorObject, tag: string): string {
  const branches = ((e.parentSchema as { oneOf?: { properties?: Record<string, { const?: unknown }> }[] })?.oneOf ??
    []) as { properties?: Record<string, { const?: unknown }> }[];
  return branches.map((b) => JSON.stringify(b.properties?.[tag]?.const)).join(', ');
}

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}
