import { readFileSync, statSync } from 'node:fs';
import _Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import _addFormats from 'ajv-formats';
import { isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node as YamlNode } from 'yaml';
import { ScaleAgentError, type ErrorDetail } from './errors.js';

// ajv and ajv-formats are CommonJS whose module.exports is the default export itself; the typings disagree.
const Ajv2020 = _Ajv2020 as unknown as typeof _Ajv2020.default;
const addFormats = _addFormats as unknown as typeof _addFormats.default;

/** Files bigger than this are refused before parsing: config files are small, and YAML parsing is not linear. */
export const MAX_CONFIG_BYTES = 4 * 1024 * 1024;
/** Alias expansions allowed when turning YAML into data (the YAML "billion laughs" guard). */
const MAX_ALIAS_COUNT = 100;

/** A parsed YAML file that can answer "where is this JSON path?" for error messages. */
export interface LocatedDocument {
  file: string;
  data: unknown;
  /** file:line:column of the node at a JSON pointer (`/kubernetes/accounts/0/name`), or of its nearest parent. */
  locate(pointer: string): { line?: number; column?: number };
}

export function parseYamlFile(file: string): LocatedDocument {
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > MAX_CONFIG_BYTES) {
      throw new ScaleAgentError(
        'INPUT_TOO_LARGE',
        `${file}: ${size} bytes is more than the ${MAX_CONFIG_BYTES} allowed`,
        {
          details: [{ file, message: `file is ${size} bytes; at most ${MAX_CONFIG_BYTES} are accepted` }],
        },
      );
    }
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if (e instanceof ScaleAgentError) throw e;
    throw new ScaleAgentError('FILE_UNREADABLE', `cannot read ${file}: ${(e as Error).message}`, {
      cause: e,
      details: [{ file, message: (e as Error).message }],
    });
  }
  return parseYamlText(file, text);
}

export function parseYamlText(file: string, text: string): LocatedDocument {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const details = doc.errors.map((err): ErrorDetail => {
      const pos = err.linePos?.[0];
      return { file, line: pos?.line, column: pos?.col, message: err.message.split('\n')[0] ?? err.message };
    });
    throw new ScaleAgentError('FILE_UNREADABLE', `${file} is not valid YAML`, { details });
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (e) {
    throw new ScaleAgentError('INPUT_TOO_LARGE', `${file}: ${(e as Error).message}`, {
      cause: e,
      details: [{ file, message: (e as Error).message }],
    });
  }
  return {
    file,
    data: data ?? {},
    locate: (pointer) => locateNode(doc, lineCounter, pointer),
  };
}

function locateNode(doc: Document, lineCounter: LineCounter, pointer: string): { line?: number; column?: number } {
  const segments = pointer
    .split('/')
    .slice(1)
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  let node: YamlNode | null | undefined = doc.contents as YamlNode | null;
  let found: YamlNode | null | undefined = node;
  for (const seg of segments) {
    if (isMap(node)) {
      const pair = node.items.find((p) => (isScalar(p.key) ? String(p.key.value) === seg : false));
      if (!pair) break;
      // Point at the key: that is the line an editor should jump to.
      found = (pair.key as YamlNode | null) ?? found;
      node = pair.value as YamlNode | null;
      if (node) found = seg === segments[segments.length - 1] ? found : node;
    } else if (isSeq(node)) {
      const item = node.items[Number(seg)] as YamlNode | undefined;
      if (!item) break;
      node = item;
      found = item;
    } else {
      break;
    }
  }
  const offset = found?.range?.[0];
  if (offset === undefined) return {};
  const pos = lineCounter.linePos(offset);
  return { line: pos.line, column: pos.col };
}

/** One ajv instance per schema: strict, all errors, defaults filled in (the schema documents them). */
export function compileSchema<T>(schema: object): ValidateFunction<T> {
  const ajv = new Ajv2020({ strict: true, allErrors: true, useDefaults: true, allowUnionTypes: true });
  addFormats(ajv);
  return ajv.compile<T>(schema);
}

/**
 * A validator for one of the package's schemas (`schemas/<file>`), compiled on first use. schemas/ sits next to src/
 * (and next to dist/ in the package); both layouts are tried.
 */
export function packagedSchemaValidator<T>(file: string): () => ValidateFunction<T> {
  let validator: ValidateFunction<T> | undefined;
  return () => {
    if (!validator) {
      let schema: object | undefined;
      for (const prefix of ['../../schemas/', '../../../schemas/']) {
        try {
          schema = JSON.parse(readFileSync(new URL(`${prefix}${file}`, import.meta.url), 'utf8')) as object;
          break;
        } catch {
          // next layout
        }
      }
      if (!schema) throw new ScaleAgentError('INTERNAL', `schemas/${file} not found next to the code`);
      validator = compileSchema<T>(schema);
    }
    return validator;
  };
}

/** Turns ajv errors into located details: `file:line:col /json/path: message`. */
export function schemaErrorDetails(doc: LocatedDocument, errors: ErrorObject[]): ErrorDetail[] {
  return errors.map((err) => {
    let path = err.instancePath;
    let message = err.message ?? 'is invalid';
    if (err.keyword === 'additionalProperties') {
      const extra = (err.params as { additionalProperty: string }).additionalProperty;
      path = `${path}/${extra.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      message = `unknown property '${extra}'`;
    } else if (err.keyword === 'enum') {
      message = `${message}: ${(err.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
    }
    return { file: doc.file, ...doc.locate(path), path: path || '/', message };
  });
}

/** The detail for a semantic check at a JSON pointer, located like a schema error. */
export function detailAt(doc: LocatedDocument, pointer: string, message: string): ErrorDetail {
  return { file: doc.file, ...doc.locate(pointer), path: pointer, message };
}
