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

/**
 * The order of a mapping's keys in the output, given its keys with a defined value (`top`: the document's root
 * mapping). Absent: the object's own order.
 */
export type KeyOrder = (keys: string[], top: boolean) => string[];

/**
 * Single-line strings as written: the same label keys, values and names recur in every object, so each one's test
 * against the two patterns runs once. Bounded, so a long-lived process does not keep every string it ever wrote.
 */
const scalars = new Map<string, string>();
const MAX_CACHED_SCALARS = 50_000;

function scalar(s: string): string {
  let out = scalars.get(s);
  if (out === undefined) {
    out = PLAIN.test(s) && !RESERVED.test(s) ? s : JSON.stringify(s);
    if (scalars.size >= MAX_CACHED_SCALARS) scalars.clear();
    scalars.set(s, out);
  }
  return out;
}

function block(s: string, indent: string): string | undefined {
  if (NEEDS_QUOTES_IN_BLOCK.test(s) || /^[ \t]/.test(s)) return undefined;
  const trailing = /\n+$/.exec(s)?.[0].length ?? 0;
  const chomp = trailing === 0 ? '-' : trailing === 1 ? '' : '+';
  const body = trailing === 0 ? s : s.slice(0, s.length - (chomp === '+' ? 1 : trailing));
  // With keep chomping the final line break is implied by the block end; the others stay as empty lines.
  const lines = body.split('\n').map((l) => (l === '' ? '' : indent + l));
  return `|${chomp}\n${lines.join('\n')}`;
}

function emitValue(v: unknown, indent: string): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return (v.includes('\n') ? block(v, indent) : undefined) ?? scalar(v);
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : JSON.stringify(String(v));
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  throw new Error(`cannot emit ${typeof v} as YAML`);
}

/**
 * The emission of one document: lines appended to `out`, each ending in a newline, and joined once at the end. Joined
 * rather than concatenated as they come: `+=` builds a rope of thousands of pieces that every later use (the write to
 * disk first) has to flatten, and whose pieces are garbage the collector copies first.
 */
class Emitter {
  readonly out: string[] = [];
  constructor(private readonly order: KeyOrder | undefined) {}

  /** Keys of the mapping's defined values, in output order. */
  keys(m: Record<string, unknown>, top: boolean): string[] {
    const keys: string[] = [];
    for (const k of Object.keys(m)) if (m[k] !== undefined) keys.push(k);
    return this.order && keys.length > 1 ? this.order(keys, top) : keys;
  }

  /**
   * A non-empty collection (`keys`: a mapping's, from keys()) whose lines are indented by `indent`, except the first,
   * which starts with `first` (a list item's "- " goes there).
   */
  collection(v: object, keys: string[] | undefined, indent: string, first: string): void {
    const nested = `${indent}  `;
    let prefix = first;
    if (keys === undefined) {
      for (const item of v as unknown[]) {
        const itemKeys = nonEmpty(item, this);
        if (itemKeys !== false) {
          // The item's first line goes right after "- ".
          this.collection(item as object, itemKeys, nested, `${prefix}- `);
        } else {
          this.out.push(`${prefix}- ${inline(item, nested)}\n`);
        }
        prefix = indent;
      }
      return;
    }
    const m = v as Record<string, unknown>;
    for (const k of keys) {
      const val = m[k];
      const valKeys = nonEmpty(val, this);
      if (valKeys !== false) {
        this.out.push(`${prefix}${scalar(k)}:\n`);
        // Sequences under a key are indented, as kubectl and Helm write them.
        this.collection(val as object, valKeys, nested, nested);
      } else {
        this.out.push(`${prefix}${scalar(k)}: ${inline(val, nested)}\n`);
      }
      prefix = indent;
    }
  }
}

/**
 * For a non-empty collection, its keys in output order (undefined for a list); false for anything else (written
 * inline: a scalar, `[]` or `{}`).
 */
function nonEmpty(v: unknown, e: Emitter, top = false): string[] | undefined | false {
  if (v === null || typeof v !== 'object') return false;
  if (Array.isArray(v)) return v.length > 0 ? undefined : false;
  const keys = e.keys(v as Record<string, unknown>, top);
  return keys.length > 0 ? keys : false;
}

function inline(v: unknown, indent: string): string {
  if (Array.isArray(v)) return '[]';
  if (v !== null && typeof v === 'object') return '{}';
  return emitValue(v, indent);
}

/** One YAML document (no `---`), ending in a newline; mappings' keys in `order`, if given. */
export function emitYaml(value: unknown, order?: KeyOrder): string {
  const e = new Emitter(order);
  const keys = nonEmpty(value, e, true);
  if (keys === false) return `${inline(value, '')}\n`;
  e.collection(value as object, keys, '', '');
  return e.out.join('');
}
