/**
 * A small YAML emitter for JSON data, several times faster than a general YAML library on the thousands of
 * objects a large topology produces. Output is valid YAML 1.1 and 1.2 and reads back as the same data in both
 * (Go's YAML in kubectl/helm/kustomize reads 1.1, where `y`, `on`, `0755` or `1:20` are not strings): a string is
 * left plain only when it cannot be mistaken for anything else, multi-line strings become literal blocks, and
 * everything else is a JSON string (valid YAML double-quoted).
 */
const PLAIN = /^[A-Za-z_/][A-Za-z0-9_./-]*$/;
const RESERVED = /^(y|yes|n|no|true|false|on|off|null|nan|inf)$/i;
// eslint-disable-next-line no-control-regex
const NEEDS_QUOTES_IN_BLOCK = /[\u0000-\u0008\u000b-\u001f\u007f\r\u0085\u2028\u2029\ufeff]/;

function scalar(s: string): string {
  return PLAIN.test(s) && !RESERVED.test(s) ? s : JSON.stringify(s);
}

function block(s: string, indent: string): string | undefined {
  if (!s.includes('\n') || NEEDS_QUOTES_IN_BLOCK.test(s) || /^[ \t]/.test(s)) return undefined;
  const trailing = /\n+$/.exec(s)?.[0].length ?? 0;
  const chomp = trailing === 0 ? '-' : trailing === 1 ? '' : '+';
  const body = trailing === 0 ? s : s.slice(0, s.length - (chomp === '+' ? 1 : trailing));
  // With keep chomping the final line break is implied by the block end; the others stay as empty lines.
  const lines = body.split('\n').map((l) => (l === '' ? '' : indent + l));
  return `|${chomp}\n${lines.join('\n')}`;
}

function emitValue(v: unknown, indent: string): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return block(v, indent) ?? scalar(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : JSON.stringify(String(v));
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  throw new Error(`cannot emit ${typeof v} as YAML`);
}

function emit(v: unknown, indent: string, out: string[]): void {
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isCollection(item) && !isEmpty(item)) {
        out.push(`${indent}- `);
        const nested: string[] = [];
        emit(item, `${indent}  `, nested);
        // The first line of the nested block goes right after "- ".
        out[out.length - 1] += (nested[0] as string).slice(indent.length + 2);
        for (let i = 1; i < nested.length; i++) out.push(nested[i] as string);
      } else {
        out.push(`${indent}- ${inline(item, `${indent}  `)}`);
      }
    }
    return;
  }
  for (const [k, val] of Object.entries(v as Record<string, unknown>)) {
    if (val === undefined) continue;
    if (isCollection(val) && !isEmpty(val)) {
      out.push(`${indent}${scalar(k)}:`);
      // Sequences under a key are indented, as kubectl and Helm write them.
      emit(val, `${indent}  `, out);
    } else {
      out.push(`${indent}${scalar(k)}: ${inline(val, `${indent}  `)}`);
    }
  }
}

function inline(v: unknown, indent: string): string {
  if (Array.isArray(v)) return '[]';
  if (v !== null && typeof v === 'object') return '{}';
  return emitValue(v, indent);
}

function isCollection(v: unknown): v is object {
  return v !== null && typeof v === 'object';
}

function isEmpty(v: object): boolean {
  return Array.isArray(v) ? v.length === 0 : Object.keys(v).length === 0;
}

/** One YAML document (no `---`), ending in a newline. */
export function emitYaml(value: unknown): string {
  if (!isCollection(value) || isEmpty(value)) return `${inline(value, '')}\n`;
  const out: string[] = [];
  emit(value, '', out);
  return `${out.join('\n')}\n`;
}
