/**
 * SQL literals for the cache's multi-row upsert, written straight into the statement's text.
 *
 * Why not mysql2's `?` placeholders: its generic escaper (sql-escaper) also escapes every `"` — the most common
 * character of a JSON object — one string concatenation each, and the statement, a rope of some 100,000 pieces for
 * 500 objects, is then flattened when mysql2 encodes it. Escaping, flattening and mysql2's scan of the finished text
 * for placeholders were about 40% of the event loop's busy time per change on the MySQL store
 * (bench/profiles/ingest-cpu.md). Here a string is scanned once by a native regular expression and most objects
 * need no escape at all.
 *
 * The rules are MySQL's for a single-quoted literal on a connection whose character set is utf8mb4 (mysql-pool.ts
 * opens every connection so) and whose SQL mode keeps backslash escapes (the server default; mysql2's own escaper
 * assumes the same): only the backslash and the quote must be escaped; NUL, Ctrl-Z, CR and LF are escaped as well,
 * as every MySQL client library does, so a statement stays one printable line in logs.
 */

// Control characters are what these match, on purpose (see above).
// eslint-disable-next-line no-control-regex
const NEEDS_ESCAPE = /[\0\n\r\x1a'\\]/;
// eslint-disable-next-line no-control-regex
const ESCAPED = /[\0\n\r\x1a'\\]/g;
const ESCAPE_OF: Readonly<Record<string, string>> = {
  '\0': '\\0',
  '\n': '\\n',
  '\r': '\\r',
  '\x1a': '\\Z',
  "'": "\\'",
  '\\': '\\\\',
};

/** A value of an upsert row: text, an integer, or NULL. */
export type SqlValue = string | number | null;

/** The value as a MySQL literal. Integers only: a row's numbers are counters, flags and milliseconds. */
export function sqlLiteral(value: SqlValue): string {
  if (value === null) return 'NULL';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) throw new TypeError(`not an integer for SQL: ${value}`);
    return String(value);
  }
  return NEEDS_ESCAPE.test(value) ? `'${value.replace(ESCAPED, (c) => ESCAPE_OF[c]!)}'` : `'${value}'`;
}
