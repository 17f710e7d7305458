import type { Stats } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { isAlias, isMap, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node } from 'yaml';
import { ScaleAgentError, type ErrorDetail } from '../shared/errors.js';

/** Topologies of thousands of accounts are a few hundred KiB; anything near this is a mistake or an attack. */
export const MAX_TOPOLOGY_BYTES = 8 * 1024 * 1024;
/** Anchors are handy for shared account settings; a few hundred alias expansions are plenty for that. */
export const MAX_ALIAS_COUNT = 1000;

/** A parsed YAML source that can say where any JSON path sits in the file. */
export interface LoadedYaml {
  file: string;
  data: unknown;
  locate(path: string, options?: { key?: boolean }): { line: number; column: number } | undefined;
  detail(path: string, message: string, options?: { key?: boolean }): ErrorDetail;
}

export interface LoadOptions {
  maxBytes?: number;
  maxAliasCount?: number;
}

export async function loadYamlFile(file: string, options: LoadOptions = {}): Promise<LoadedYaml> {
  const maxBytes = options.maxBytes ?? MAX_TOPOLOGY_BYTES;
  let info: Stats;
  try {
    info = await stat(file);
  } catch (cause) {
    throw unreadable(file, describeFsError(cause), cause);
  }
  if (info.isDirectory()) throw unreadable(file, 'is a directory, not a file');
  if (!info.isFile()) throw unreadable(file, 'is not a regular file');
  // Checked before reading, so a huge file costs neither memory nor parse time.
  if (info.size > maxBytes) throw tooLarge(file, info.size, maxBytes);
  let bytes: Buffer;
  try {
    bytes = await readFile(file);
  } catch (cause) {
    throw unreadable(file, describeFsError(cause), cause);
  }
  // YAML is text: a NUL byte or invalid UTF-8 means a binary file was passed by mistake.
  let source: string;
  try {
    if (bytes.includes(0)) throw new Error('NUL byte');
    source = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw unreadable(file, 'is not a UTF-8 text file (binary content?)');
  }
  return parseYamlSource(source, file, options);
}

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

export function parseYamlSource(source: string, file: string, options: LoadOptions = {}): LoadedYaml {
  const maxBytes = options.maxBytes ?? MAX_TOPOLOGY_BYTES;
  const bytes = Buffer.byteLength(source, 'utf8');
  if (bytes > maxBytes) throw tooLarge(file, bytes, maxBytes);
  const lineCounter = new LineCounter();
  let doc: Document.Parsed;
  try {
    doc = parseDocument(source, { lineCounter, uniqueKeys: true, prettyErrors: false, strict: true });
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
          ? `duplicate key '${(/^[^:\n]+/.exec(source.slice(e.pos[0]))?.[0] ?? '').trim()}'`
          : yamlMessage(e.message),
    }));
    const dup = doc.errors.some((e) => e.code === 'DUPLICATE_KEY');
    throw new ScaleAgentError('INVALID_INPUT', `${file} is not valid YAML${dup ? ' (duplicate keys)' : ''}`, {
      details,
    });
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: options.maxAliasCount ?? MAX_ALIAS_COUNT });
  } catch (cause) {
    if (cause instanceof ReferenceError && /alias/i.test(cause.message)) {
      throw new ScaleAgentError(
        'INPUT_TOO_LARGE',
        `${file}: too many YAML alias expansions (limit ${options.maxAliasCount ?? MAX_ALIAS_COUNT}); refusing a possible alias bomb`,
        { cause, details: [{ file, message: 'excessive YAML alias expansion' }] },
      );
    }
    throw parseFailure(file, cause);
  }
  const locate = (path: string, opts: { key?: boolean } = {}): { line: number; column: number } | undefined => {
    const found = nodeAt(doc, path, opts.key ?? false);
    const offset = found?.range?.[0];
    return offset === undefined ? undefined : pos(offset);
  };
  return {
    file,
    data,
    locate,
    detail: (path, message, opts) => ({ message, file, ...locate(path, opts), path: path || '/' }),
  };
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
  return node as Node as Located;
}

function unescapePointer(s: string): string {
  return s.replace(/~1/g, '/').replace(/~0/g, '~');
}
