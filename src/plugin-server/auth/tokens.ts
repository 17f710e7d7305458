import { createHash } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { ScaleAgentError } from '../../shared/errors.js';

export type TokenScope = 'read' | 'admin';

export interface TokenEntry {
  name: string;
  scope: TokenScope;
}

const digest = (token: string): string => createHash('sha256').update(token).digest('hex');

/**
 * A bearer-token file: one `<token> <name> [scope]` per line, `#` comments. Tokens are held only as SHA-256
 * digests, and looked up by digest so the comparison does not leak a token's prefix through timing. The file is
 * re-read when its mtime or size changes, so a rotated Secret applies without a restart.
 */
export class TokenFile {
  private entries = new Map<string, TokenEntry>();
  private stamp = '';

  constructor(
    readonly file: string,
    private readonly defaultScope: TokenScope = 'read',
  ) {
    this.reload();
  }

  lookup(token: string): TokenEntry | undefined {
    this.refresh();
    if (!token) return undefined;
    return this.entries.get(digest(token));
  }

  private refresh(): void {
    try {
      const st = statSync(this.file);
      if (`${st.mtimeMs}:${st.size}` !== this.stamp) this.reload();
    } catch {
      // A Secret being swapped (symlink flip) can vanish for a moment: keep the last good set.
    }
  }

  private reload(): void {
    let text: string;
    let stamp: string;
    try {
      const st = statSync(this.file);
      stamp = `${st.mtimeMs}:${st.size}`;
      text = readFileSync(this.file, 'utf8');
    } catch (e) {
      throw new ScaleAgentError('FILE_UNREADABLE', `cannot read token file ${this.file}`, { cause: e });
    }
    this.entries = parseTokens(text, this.file, this.defaultScope);
    this.stamp = stamp;
  }
}

export function parseTokens(text: string, file: string, defaultScope: TokenScope): Map<string, TokenEntry> {
  const out = new Map<string, TokenEntry>();
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const [token, name, scope, ...rest] = line.split(/\s+/);
    const where = `${file}:${i + 1}`;
    if (!token || !name || rest.length > 0 || (scope !== undefined && scope !== 'read' && scope !== 'admin')) {
      throw new ScaleAgentError('INVALID_INPUT', `${where}: expected "<token> <name> [read|admin]"`);
    }
    if (token.length < 16) throw new ScaleAgentError('INVALID_INPUT', `${where}: token shorter than 16 characters`);
    out.set(digest(token), { name, scope: (scope as TokenScope | undefined) ?? defaultScope });
  });
  return out;
}

/** The token of an `Authorization: Bearer <token>` value, or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(value ?? '');
  return m?.[1];
}
