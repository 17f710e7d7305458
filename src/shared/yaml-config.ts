/**
 * The one loader of the project's YAML files (the agent config, the plugin-server config, the topology, and the
 * Clouddriver files `accounts migrate` reads): read with a size bound, parse with positions, merge a runtime's
 * config files in order (overlays), validate against a schema of schemas/, and report every problem as
 * `file:line:column /json/path: message`, in the file the value came from.
 */
import { readdirSync, readFileSync, statSync, type Stats } from 'node:fs';
import { join } from 'node:path';
import _Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import _addFormats from 'ajv-formats';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document } from 'yaml';
import { ScaleAgentError, type ErrorDetail } from './errors.js';

// ajv and ajv-formats are CommonJS whose module.exports is the default export itself; the typings disagree.
const Ajv2020 = _Ajv2020 as unknown as typeof _Ajv2020.default;
const addFormats = _addFormats as unknown as typeof _addFormats.default;

/** Runtime config files are small, and YAML parsing is not linear: anything near this is a mistake or an attack. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
/** Alias expansions allowed when turning YAML into data (the YAML "billion laughs" guard). */
export const MAX_CONFIG_ALIASES = 100;

export interface YamlLimits {
  maxBytes?: number;
  maxAliasCount?: number;
}

/** A parsed YAML file that can say where any JSON path sits in it. */
export interface LoadedYaml {
  file: string;
  data: unknown;
  /**
   * line:column of the node at a JSON pointer (`/kubernetes/accounts/0/name`), or of its deepest existing ancestor
   * (so a missing property points at its parent). With `key`, a map entry is located at its key.
   */
  locate(pointer: string, options?: { key?: boolean }): { line: number; column: number } | undefined;
  /** The error detail for a problem at a JSON pointer. */
  detail(pointer: string, message: string, options?: { key?: boolean }): ErrorDetail;
  /** The file the value at a JSON pointer came from (one of several when files were merged). */
  fileOf(pointer: string): string;
}

/** Reads and parses a YAML file; unreadable, oversized, binary or unparseable files throw naming the file. */
export function readYamlFile(file: string, limits: YamlLimits = {}): LoadedYaml {
  const maxBytes = limits.maxBytes ?? MAX_CONFIG_BYTES;
  let info: Stats;
  try {
    info = statSync(file);
  } catch (cause) {
    throw unreadable(file, describeFsError(cause), cause);
  }
  if (info.isDirectory()) throw unreadable(file, 'is a directory, not a file');
  if (!info.isFile()) throw unreadable(file, 'is not a regular file');
  // Checked before reading, so a huge file costs neither memory nor parse time.
  if (info.size > maxBytes) throw tooLarge(file, info.size, maxBytes);
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (cause) {
    throw unreadable(file, describeFsError(cause), cause);
  }
  // YAML is text: a NUL byte or invalid UTF-8 means a binary file was passed by mistake.
  let text: string;
  try {
    if (bytes.includes(0)) throw new Error('NUL byte');
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw unreadable(file, 'is not a UTF-8 text file (binary content?)');
  }
  return parseYamlText(file, text, limits);
}

/** Parses YAML already in memory; `file` names it in errors. Duplicate keys are errors, as are alias bombs. */
export function parseYamlText(file: string, text: string, limits: YamlLimits = {}): LoadedYaml {
  const maxBytes = limits.maxBytes ?? MAX_CONFIG_BYTES;
  const maxAliasCount = limits.maxAliasCount ?? MAX_CONFIG_ALIASES;
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) throw tooLarge(file, bytes, maxBytes);
  const lineCounter = new LineCounter();
  let doc: Document.Parsed;
  try {
    doc = parseDocument(text, { lineCounter, uniqueKeys: true, prettyErrors: false, strict: true });
  } catch (cause) {
    throw parseFailure(file, cause);
  }
  const pos = (offset: number): { line: number; column: number } => {
    const p = lineCounter.linePos(offset);
    return { line: p.line, column: p.col };
  };
  if (doc.errors.length > 0) {
    const details = doc.errors.map((e) => ({
      file,
      ...pos(e.pos[0]),
      message:
        e.code === 'DUPLICATE_KEY'
          ? `duplicate key '${(/^[^:\n]+/.exec(text.slice(e.pos[0]))?.[0] ?? '').trim()}'`
          : yamlMessage(e.message),
    }));
    const dup = doc.errors.some((e) => e.code === 'DUPLICATE_KEY');
    throw new ScaleAgentError('INVALID_INPUT', `${file} is not valid YAML${dup ? ' (duplicate keys)' : ''}`, {
      details,
    });
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount });
  } catch (cause) {
    if (cause instanceof ReferenceError && /alias/i.test(cause.message)) {
      throw new ScaleAgentError(
        'INPUT_TOO_LARGE',
        `${file}: too many YAML alias expansions (limit ${maxAliasCount}); refusing a possible alias bomb`,
        { cause, details: [{ file, message: 'excessive YAML alias expansion' }] },
      );
    }
    throw parseFailure(file, cause);
  }
  const locate = (pointer: string, opts: { key?: boolean } = {}): { line: number; column: number } | undefined => {
    const offset = nodeAt(doc, pointer, opts.key ?? false)?.range?.[0];
    return offset === undefined ? undefined : pos(offset);
  };
  return {
    file,
    data,
    locate,
    detail: (pointer, message, opts) => ({ file, ...locate(pointer, opts), path: pointer || '/', message }),
    fileOf: () => file,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Several files: overlays
// ---------------------------------------------------------------------------------------------------------------

/**
 * The files a runtime's `--config` arguments name, in merge order: a file as given; a directory as its `*.yaml`,
 * `*.yml` and `*.json` files (hidden ones, such as a ConfigMap volume's `..data`, skipped) in name order, except that
 * files whose name ends in `-local` come after the others (Armory's `armory-agent-local.yaml` overrides
 * `armory-agent.yml`, though it sorts before it).
 */
export function configFiles(paths: readonly string[]): string[] {
  const out: string[] = [];
  for (const p of paths) {
    let dir = false;
    try {
      dir = statSync(p).isDirectory();
    } catch {
      // not there: readYamlFile says so, naming it
    }
    if (!dir) {
      out.push(p);
      continue;
    }
    const files = readdirSync(p)
      .filter((f) => !f.startsWith('.') && /\.(ya?ml|json)$/.test(f))
      .sort((a, b) => Number(isLocal(a)) - Number(isLocal(b)) || (a < b ? -1 : a > b ? 1 : 0));
    if (files.length === 0) {
      throw new ScaleAgentError('FILE_UNREADABLE', `cannot read ${p}: the directory has no .yaml, .yml or .json file`, {
        details: [{ file: p, message: 'no config file in this directory' }],
      });
    }
    out.push(...files.map((f) => join(p, f)));
  }
  return out;
}

function isLocal(file: string): boolean {
  return /-local\.(ya?ml|json)$/.test(file);
}

/**
 * Merges config files, later over earlier: mappings merge key by key, a scalar or a list replaces what was there,
 * except the lists named in `byName` (JSON pointers, e.g. `/kubernetes/accounts`), whose items merge by their
 * `name`: an item of a later file replaces the earlier item of that name whole, a new name is appended. The result
 * locates every value in the file it came from, so schema errors name that file and line. One file is returned as is.
 */
export function mergeYaml(docs: readonly LoadedYaml[], byName: readonly string[] = []): LoadedYaml {
  if (docs.length === 1) return docs[0] as LoadedYaml;
  const origins = new Map<string, { doc: LoadedYaml; pointer: string }>();
  const lists = new Set(byName);
  const forget = (under: string): void => {
    for (const k of [...origins.keys()]) if (k === under || k.startsWith(`${under}/`)) origins.delete(k);
  };
  const place = (value: unknown, doc: LoadedYaml, src: string, dst: string): unknown => {
    forget(dst);
    origins.set(dst, { doc, pointer: src });
    return structuredClone(value);
  };
  const mergeInto = (target: unknown, dst: string, value: unknown, doc: LoadedYaml, src: string): unknown => {
    if (isMapping(target) && isMapping(value)) {
      for (const [k, v] of Object.entries(value)) {
        const d = `${dst}/${escapePointer(k)}`;
        const s = `${src}/${escapePointer(k)}`;
        target[k] = k in target ? mergeInto(target[k], d, v, doc, s) : place(v, doc, s, d);
      }
      return target;
    }
    if (lists.has(dst) && Array.isArray(target) && Array.isArray(value)) {
      value.forEach((item: unknown, i) => {
        const name = isMapping(item) ? item.name : undefined;
        const at = name === undefined ? -1 : target.findIndex((t) => isMapping(t) && t.name === name);
        const index = at >= 0 ? at : target.length;
        target[index] = place(item, doc, `${src}/${i}`, `${dst}/${index}`);
      });
      return target;
    }
    return place(value, doc, src, dst);
  };
  let data: unknown = undefined;
  for (const doc of docs) {
    // An empty file (or one holding only comments) adds nothing.
    if (doc.data === null || doc.data === undefined) continue;
    data = data === undefined ? place(doc.data, doc, '', '') : mergeInto(data, '', doc.data, doc, '');
  }
  const first = docs[0] as LoadedYaml;
  /** The file and in-file pointer of the deepest merged node at or above `pointer`. */
  const originOf = (pointer: string): { doc: LoadedYaml; pointer: string } => {
    let p = pointer === '/' ? '' : pointer;
    for (;;) {
      const o = origins.get(p);
      if (o) return { doc: o.doc, pointer: o.pointer + pointer.slice(p.length) };
      if (p === '') return { doc: first, pointer };
      p = p.slice(0, p.lastIndexOf('/'));
    }
  };
  return {
    file: docs.map((d) => d.file).join(' + '),
    data,
    locate: (pointer, opts) => {
      const o = originOf(pointer);
      return o.doc.locate(o.pointer, opts);
    },
    detail: (pointer, message, opts) => {
      const o = originOf(pointer);
      return o.doc.detail(o.pointer, message, opts);
    },
    fileOf: (pointer) => originOf(pointer).doc.file,
  };
}

function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Validates a runtime config file (agent, plugin-server) against `schemas/<schema>.schema.json` and returns it with
 * the schema's defaults filled in; an empty file is all defaults. Throws INVALID_INPUT with every problem located.
 */
export function validateConfig<T>(src: LoadedYaml, schema: string, what: string): T {
  const data = structuredClone(src.data ?? {});
  if (typeof data !== 'object' || Array.isArray(data)) {
    throw new ScaleAgentError('INVALID_INPUT', `${src.file}: the ${what} must be a mapping`, {
      details: [src.detail('', 'must be a mapping (key: value)')],
    });
  }
  const validate = schemaValidator<T>(schema, { defaults: true });
  if (!validate(data)) {
    throw new ScaleAgentError('INVALID_INPUT', `${src.file} does not match the ${what} schema`, {
      details: schemaErrors(validate.errors ?? [], src),
    });
  }
  return data;
}

// ---------------------------------------------------------------------------------------------------------------
// Schemas
// ---------------------------------------------------------------------------------------------------------------

const validators = new Map<string, ValidateFunction>();
const compilers = new Map<boolean, InstanceType<typeof Ajv2020>>();

/** The base of the schemas' $ids: `${SCHEMA_BASE}agent-config.schema.json` names that file's schema. */
export const SCHEMA_BASE = 'https://scale-agent.io/schemas/';

/**
 * One ajv per mode that knows every file of schemas/, so a schema's `$ref`s into another (account-options.schema.json)
 * resolve. With `defaults`, validation fills in the schema's defaults (ajv's useDefaults: under properties, allOf and
 * $ref, not inside oneOf or anyOf).
 */
function compiler(defaults: boolean): InstanceType<typeof Ajv2020> {
  let ajv = compilers.get(defaults);
  if (!ajv) {
    ajv = new Ajv2020({
      strict: true,
      allErrors: true,
      verbose: true,
      discriminator: true,
      allowUnionTypes: true,
      useDefaults: defaults,
    });
    addFormats(ajv);
    for (const file of schemaFiles()) ajv.addSchema(readSchema(file));
    compilers.set(defaults, ajv);
  }
  return ajv;
}

/** The validator of `schemas/<name>.schema.json`, compiled once per process. */
export function schemaValidator<T>(name: string, options: { defaults?: boolean } = {}): ValidateFunction<T> {
  const defaults = options.defaults ?? false;
  const id = `${SCHEMA_BASE}${name}.schema.json`;
  let v = validators.get(`${id}\u0000${defaults}`);
  if (!v) {
    v = compiler(defaults).getSchema(id);
    if (!v) throw new ScaleAgentError('INTERNAL', `schemas/${name}.schema.json not found next to the code`);
    validators.set(`${id}\u0000${defaults}`, v);
  }
  return v as ValidateFunction<T>;
}

/**
 * A validator for a schema built in code that refers to the files of schemas/ by their $id (a request body made of
 * dynamic account definitions). No defaults are filled in: a request says what it changes.
 */
export function compileSchema<T>(schema: object): ValidateFunction<T> {
  return compiler(false).compile<T>(schema);
}

/**
 * The properties a schema of schemas/ declares for its root object, its allOf members' included, each with its $ref
 * followed (the keywords beside a $ref win): for code that reads such an object key by key, as the schema sees it.
 * `ref` is a file of schemas/, or a part of one (`account-options.schema.json#/$defs/options`).
 */
export function schemaProperties(ref: string): ReadonlyMap<string, Record<string, unknown>> {
  // The schemas are fixed for the process; synth asks for the account options' once per account.
  let props = propertiesByRef.get(ref);
  if (!props) {
    props = collectProperties(ref);
    propertiesByRef.set(ref, props);
  }
  return props;
}

const propertiesByRef = new Map<string, ReadonlyMap<string, Record<string, unknown>>>();

function collectProperties(ref: string): ReadonlyMap<string, Record<string, unknown>> {
  type Node = Record<string, unknown> & { $ref?: string; allOf?: Node[]; properties?: Record<string, Node> };
  const ajv = compiler(false);
  const deref = (node: Node, base: string): [Node, string] => {
    let n = node;
    let b = base;
    while (typeof n.$ref === 'string') {
      const { $ref, ...beside } = n;
      b = new URL($ref, b).href;
      n = { ...(ajv.getSchema(b)?.schema as Node), ...beside };
    }
    return [n, b];
  };
  const out = new Map<string, Record<string, unknown>>();
  const visit = (node: Node, base: string): void => {
    const [n, b] = deref(node, base);
    for (const member of n.allOf ?? []) visit(member, b);
    for (const [key, p] of Object.entries(n.properties ?? {})) out.set(key, deref(p, b)[0]);
  };
  visit({ $ref: ref }, SCHEMA_BASE);
  return out;
}

/** The defaults `schemaProperties(ref)` declare, fresh copies each call. */
export function schemaDefaults(ref: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, p] of schemaProperties(ref)) {
    const d = p.default;
    if (d !== undefined) out[key] = d !== null && typeof d === 'object' ? structuredClone(d) : d;
  }
  return out;
}

// schemas/ sits next to src/ (and next to dist/ in the package); both layouts are tried.
const SCHEMA_DIRS = ['../../schemas/', '../../../schemas/'].map((p) => new URL(p, import.meta.url));

function schemaDir(): URL {
  for (const dir of SCHEMA_DIRS) {
    try {
      if (statSync(dir).isDirectory()) return dir;
    } catch {
      // next layout
    }
  }
  throw new ScaleAgentError('INTERNAL', 'schemas/ not found next to the code');
}

function schemaFiles(): string[] {
  return readdirSync(schemaDir())
    .filter((f) => f.endsWith('.schema.json'))
    .sort();
}

function readSchema(file: string): object {
  return JSON.parse(readFileSync(new URL(file, schemaDir()), 'utf8')) as object;
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
      case 'unevaluatedProperties': {
        const extra = String(p.additionalProperty ?? p.unevaluatedProperty);
        path = `${path}/${escapePointer(extra)}`;
        key = true;
        message = `unknown property '${extra}'`;
        break;
      }
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

// ---------------------------------------------------------------------------------------------------------------
// Errors and positions
// ---------------------------------------------------------------------------------------------------------------

function unreadable(file: string, problem: string, cause?: unknown): ScaleAgentError {
  return new ScaleAgentError('FILE_UNREADABLE', `cannot read ${file}: ${problem}`, {
    ...(cause !== undefined ? { cause } : {}),
    details: [{ file, message: problem }],
  });
}

function describeFsError(cause: unknown): string {
  const code = (cause as NodeJS.ErrnoException).code;
  if (code === 'ENOENT') return 'no such file';
  if (code === 'EACCES' || code === 'EPERM') return 'permission denied';
  if (code === 'ENOTDIR') return 'a parent of this path is not a directory';
  if (code === 'EISDIR') return 'is a directory, not a file';
  return (cause as Error).message;
}

function tooLarge(file: string, size: number, max: number): ScaleAgentError {
  return new ScaleAgentError('INPUT_TOO_LARGE', `${file} is ${size} bytes; the limit is ${max} bytes`, {
    details: [{ file, message: `is ${size} bytes; the limit is ${max} bytes` }],
  });
}

function parseFailure(file: string, cause: unknown): ScaleAgentError {
  // Pathologically deep nesting overflows the parser's stack; report it as too large rather than crash.
  if (cause instanceof RangeError) {
    return new ScaleAgentError('INPUT_TOO_LARGE', `${file} is nested too deeply to parse`, {
      cause,
      details: [{ file, message: 'nesting too deep' }],
    });
  }
  return new ScaleAgentError('FILE_UNREADABLE', `${file}: ${(cause as Error).message}`, {
    cause,
    details: [{ file, message: (cause as Error).message }],
  });
}

function yamlMessage(message: string): string {
  return (message.split('\n')[0] ?? message).replace(/ at line \d+, column \d+:?$/, '');
}

type Located = { range?: [number, number, number] | null } | null | undefined;

/**
 * The YAML node at a JSON pointer, or the deepest existing ancestor (so "missing property" points at its parent
 * map). With `key`, the last segment is located at its key rather than its value (for unknown properties).
 */
function nodeAt(doc: Document.Parsed, pointer: string, key: boolean): Located {
  const segments = pointer === '' || pointer === '/' ? [] : pointer.slice(1).split('/').map(unescapePointer);
  let node: unknown = doc.contents;
  for (let i = 0; i < segments.length; i++) {
    const seg = segments[i] as string;
    if (isAlias(node)) node = node.resolve(doc);
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) === seg : false));
      if (!pair) return node as Located;
      if (key && i === segments.length - 1) return pair.key as Located;
      if (pair.value === null || pair.value === undefined) return pair.key as Located;
      node = pair.value;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)];
      if (item === undefined || item === null) return node as Located;
      node = item;
    } else {
      return node as Located;
    }
  }
  return node as Located;
}

function unescapePointer(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}

function escapePointer(s: string): string {
  return s.replace(/~/g, '~0').replace(/\//g, '~1');
}
