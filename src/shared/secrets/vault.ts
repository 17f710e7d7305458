import { readFileSync } from 'node:fs';
import type { AgentConfig } from '../config-types/agent-config.js';
import { ScaleAgentError } from '../errors.js';
import { referenceParams, type SecretReference } from './reference.js';
import type { OpenSecret, SecretEngine } from './registry.js';

/**
 * `secrets.vault` of a runtime's config: where Vault is and how to log in (Armory's `secrets.vault` keys), as the
 * config schema declares it (the generated type, not a second copy of its fields); `enabled` is the loader's.
 */
export type VaultSettings = Omit<NonNullable<AgentConfig['secrets']['vault']>, 'enabled'>;

const REQUEST_TIMEOUT_MS = 10_000;
const USAGE = 'vault!e:ENGINE!p:PATH!k:KEY';

/**
 * References to Vault's KV version 2 engine over its HTTP API (GET /v1/<engine>/data/<path>; the value is
 * data.data[<key>]), logged in with a token or with Kubernetes auth. Vault has no watch: an open reference is read
 * again every refreshSeconds and reported changed when its value differs. A refused read (403: the token expired
 * or was revoked) logs in again once, as Armory's agent does.
 */
export class VaultEngine implements SecretEngine {
  readonly name = 'vault';
  private token: string | undefined;

  constructor(
    private readonly settings: VaultSettings,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  async open(ref: SecretReference, onChange: () => void, signal?: AbortSignal): Promise<OpenSecret> {
    const p = referenceParams(ref, ['e', 'k'], ['p', 'n', 'b'], USAGE);
    // `n` is the older name of `p` (Armory's agent still reads it).
    const path = p.p ?? p.n;
    if (!path) throw new ScaleAgentError('INVALID_INPUT', `parameter 'p' is missing (${USAGE})`);
    const read = (): Promise<Buffer> => this.read(p.e, path, p.k, signal);
    let last = await read();
    let closed = false;
    const timer = setInterval(() => {
      read().then(
        (v) => {
          if (closed || v.equals(last)) return;
          last = v;
          onChange();
        },
        // Vault unreachable for a moment: the value in use stays; the next round tries again.
        () => undefined,
      );
    }, this.settings.refreshSeconds * 1000);
    timer.unref();
    return {
      value: last,
      close: () => {
        closed = true;
        clearInterval(timer);
      },
    };
  }

  private async read(engine: string, path: string, key: string, signal?: AbortSignal): Promise<Buffer> {
    const url = `${this.settings.url.replace(/\/+$/, '')}/v1/${engine}/data/${path}`;
    this.token ??= await this.login(signal);
    let res = await this.request('GET', url, undefined, this.token, signal);
    if (res.status === 403) {
      this.token = await this.login(signal);
      res = await this.request('GET', url, undefined, this.token, signal);
    }
    if (res.status === 404) {
      throw new ScaleAgentError('NOT_FOUND', `Vault has no secret at ${engine}/data/${path} (KV version 2)`);
    }
    if (res.status !== 200) throw vaultError(res, `reading ${engine}/data/${path}`);
    const data = (res.body as { data?: { data?: Record<string, unknown> | null } }).data?.data;
    if (!data) throw new ScaleAgentError('NOT_FOUND', `Vault secret ${engine}/data/${path} has no data (deleted?)`);
    const value = data[key];
    if (typeof value !== 'string') {
      throw new ScaleAgentError(
        'NOT_FOUND',
        `Vault secret ${engine}/data/${path} has no string key '${key}' (keys: ${Object.keys(data).sort().join(', ')})`,
      );
    }
    return Buffer.from(value, 'utf8');
  }

  private async login(signal?: AbortSignal): Promise<string> {
    const s = this.settings;
    if (s.authMethod === 'TOKEN') {
      const token = s.tokenFile ? readToken(s.tokenFile, 'secrets.vault.tokenFile') : this.env.VAULT_TOKEN?.trim();
      if (!token) {
        throw new ScaleAgentError(
          'INVALID_INPUT',
          'Vault authMethod TOKEN needs secrets.vault.tokenFile or VAULT_TOKEN',
        );
      }
      return token;
    }
    const jwt = readToken(s.serviceAccountTokenFile, 'the ServiceAccount token');
    const url = `${s.url.replace(/\/+$/, '')}/v1/auth/${s.path}/login`;
    const res = await this.request('POST', url, { role: s.role, jwt }, undefined, signal);
    const token = (res.body as { auth?: { client_token?: string } }).auth?.client_token;
    if (res.status !== 200 || !token) throw vaultError(res, `logging in at auth/${s.path}/login as role ${s.role}`);
    return token;
  }

  private async request(
    method: string,
    url: string,
    body: unknown,
    token: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ status: number; body: unknown }> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (token) headers['x-vault-token'] = token;
    if (this.settings.namespace) headers['x-vault-namespace'] = this.settings.namespace;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const timeout = AbortSignal.timeout(REQUEST_TIMEOUT_MS);
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (e) {
      throw new ScaleAgentError('UNAVAILABLE', `Vault at ${this.settings.url} unreachable: ${(e as Error).message}`, {
        cause: e,
      });
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : {};
    } catch {
      parsed = { errors: [text.slice(0, 200)] };
    }
    return { status: res.status, body: parsed };
  }
}

function readToken(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8').trim();
  } catch (e) {
    throw new ScaleAgentError('FILE_UNREADABLE', `cannot read ${what} ${file}: ${(e as Error).message}`, { cause: e });
  }
}

/** Vault answers errors as `{"errors": ["..."]}`; those messages name no secret values. */
function vaultError(res: { status: number; body: unknown }, doing: string): ScaleAgentError {
  const errors = (res.body as { errors?: unknown[] }).errors;
  const said = Array.isArray(errors) && errors.length > 0 ? `: ${errors.map(String).join('; ')}` : '';
  const kind = res.status === 403 ? 'FORBIDDEN' : res.status === 401 ? 'UNAUTHENTICATED' : 'UNAVAILABLE';
  return new ScaleAgentError(kind, `Vault refused ${doing} (HTTP ${res.status})${said}`);
}
