import { readFile } from 'node:fs/promises';
import { ScaleAgentError } from '../../shared/errors.js';
import type { HttpArtifactAccountConfig } from '../config.js';

export const HTTP_FILE = 'http/file';

/** Redirects followed, each checked against the allow-list like the first URL (Clouddriver's OkHttp follows 20). */
const MAX_REDIRECTS = 5;
const DEFAULT_PORT: Record<string, string> = { 'http:': '80', 'https:': '443' };

export interface DownloadLimits {
  timeoutMs: number;
  maxBytes: number;
}

/**
 * Whether an allow-list entry admits a URL: `host` and `*.domain` on the scheme's default port only, `host:port` on
 * that port. Ports are explicit so an entry for a web server does not open every other service on that machine.
 */
export function hostAllowed(url: URL, allowedHosts: readonly string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || DEFAULT_PORT[url.protocol];
  return allowedHosts.some((entry) => {
    const m = /^(.*?)(?::(\d+))?$/.exec(entry.toLowerCase());
    const [pattern = '', entryPort = DEFAULT_PORT[url.protocol]] = m ? [m[1], m[2]] : [];
    if (entryPort !== port) return false;
    if (pattern.startsWith('*.')) return host.endsWith(pattern.slice(1)) && host.length > pattern.length - 1;
    return host === pattern;
  });
}

/** The reference as a URL this account may fetch, or a 400 saying what is wrong with it. */
export function allowedUrl(reference: string, account: HttpArtifactAccountConfig): URL {
  let url: URL;
  try {
    url = new URL(reference);
  } catch {
    throw new ScaleAgentError('INVALID_INPUT', `the http/file artifact's reference "${reference}" is not a URL`, {
      details: [{ path: 'reference', message: 'not a URL' }],
    });
  }
  if (!(url.protocol in DEFAULT_PORT)) {
    throw new ScaleAgentError('INVALID_INPUT', `the http/file artifact's reference must be http:// or https://`, {
      details: [{ path: 'reference', message: `scheme ${url.protocol} is not fetched` }],
    });
  }
  if (!hostAllowed(url, account.allowedHosts)) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `artifact account "${account.name}" does not fetch from ${url.host}: its allowedHosts are ` +
        `${account.allowedHosts.join(', ')} (spinnaker.artifacts.http)`,
      { details: [{ path: 'reference', message: `host ${url.host} is not allowed` }] },
    );
  }
  return url;
}

/** The Authorization header from the account's file, read now so a rotated Secret applies at once. */
async function authorization(account: HttpArtifactAccountConfig): Promise<string | undefined> {
  const file = account.usernamePasswordFile ?? account.tokenFile;
  if (!file) return undefined;
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    throw new ScaleAgentError('INTERNAL', `artifact account "${account.name}": cannot read ${file}`, { cause: e });
  }
  // Clouddriver strips newlines from its usernamePasswordFile; a Secret written by hand often ends with one.
  const secret = text.replace(/[\r\n]/g, '');
  return account.usernamePasswordFile ? `Basic ${Buffer.from(secret).toString('base64')}` : `Bearer ${secret.trim()}`;
}

async function readLimited(res: Response, url: URL, maxBytes: number): Promise<Buffer> {
  const tooLarge = () =>
    new ScaleAgentError('INPUT_TOO_LARGE', `the artifact at ${url.href} is larger than ${maxBytes} bytes`);
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) {
    await res.body?.cancel();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += (chunk as Uint8Array).length;
    // Leaving the loop by a throw cancels the body (the iterator's return), which stops the download.
    if (size > maxBytes) throw tooLarge();
    chunks.push(Buffer.from(chunk as Uint8Array));
  }
  return Buffer.concat(chunks);
}

/**
 * An http/file artifact's bytes, as Clouddriver's HttpArtifactCredentials downloads them (a GET of the reference,
 * the account's Basic authorization, any non-2xx a failure), except that every URL, redirects included, must be on
 * the account's allow-list: the plugin-server sits inside the cluster network, so an open fetcher would let any
 * caller read internal services.
 */
export async function downloadHttpFile(
  account: HttpArtifactAccountConfig,
  reference: string,
  limits: DownloadLimits,
): Promise<Buffer> {
  let url = allowedUrl(reference, account);
  const auth = await authorization(account);
  const origin = url.origin;
  const signal = AbortSignal.timeout(limits.timeoutMs);
  try {
    for (let hop = 0; ; hop++) {
      // Credentials go only to the origin the reference names, as fetch does on a cross-origin redirect.
      const headers: Record<string, string> = auth && url.origin === origin ? { authorization: auth } : {};
      const res = await fetch(url, { headers, redirect: 'manual', signal });
      const location = res.headers.get('location');
      if (res.status >= 300 && res.status < 400 && location) {
        await res.body?.cancel();
        if (hop >= MAX_REDIRECTS) {
          throw new ScaleAgentError('BAD_GATEWAY', `${reference}: more than ${MAX_REDIRECTS} redirects`);
        }
        url = allowedUrl(new URL(location, url).href, account);
        continue;
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new ScaleAgentError(
          'BAD_GATEWAY',
          `${url.href} answered ${res.status} to artifact account "${account.name}"`,
        );
      }
      return await readLimited(res, url, limits.maxBytes);
    }
  } catch (e) {
    if (e instanceof ScaleAgentError) throw e;
    if (signal.aborted) {
      throw new ScaleAgentError('TIMEOUT', `${url.href}: no complete answer within ${limits.timeoutMs} ms`, {
        cause: e,
      });
    }
    const reason = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new ScaleAgentError(
      'BAD_GATEWAY',
      `${url.href}: ${reason?.code ?? reason?.message ?? (e as Error).message}`,
      {
        cause: e,
      },
    );
  }
}
