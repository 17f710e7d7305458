/**
 * The formats of the two secrets the plugin-server reads from files, in one place: the compiler generates them and
 * checks the ones it keeps in --certs-dir, the plugin-server checks what it is given.
 */

/** Below this a peer secret could be guessed; `openssl rand -hex 32` and the compiler's secret are 64 characters. */
export const MIN_PEER_SECRET_LENGTH = 32;

/** Whether `text` (trimmed) can be the replicas' peer secret: one word of at least MIN_PEER_SECRET_LENGTH characters. */
export function isPeerSecret(text: string): boolean {
  return text.length >= MIN_PEER_SECRET_LENGTH && !/\s/.test(text);
}

/** A 32-byte AES-256 key written as 64 hex characters or as base64 (standard or URL-safe); undefined otherwise. */
export function decodeEncryptionKey(text: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(text)) {
    const b = Buffer.from(text, 'base64');
    if (b.length === 32) return b;
  }
  return undefined;
}
