import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ScaleAgentError } from '../../shared/errors.js';
import { decodeEncryptionKey } from '../../shared/secret-formats.js';
import type { PluginServerConfig } from '../config.js';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * AES-256-GCM for secrets at rest (dynamic accounts' kubeconfig contents). Layout: version byte, 12-byte IV,
 * 16-byte tag, ciphertext. The account name is bound as additional data, so a ciphertext copied onto another
 * row does not decrypt.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  static fromKey(key: Buffer): SecretBox {
    if (key.length !== 32) throw new ScaleAgentError('INVALID_INPUT', 'the encryption key must be 32 bytes');
    return new SecretBox(key);
  }

  /** The key configured in dynamicAccounts (file or environment variable), or undefined when none is. */
  static fromConfig(config: PluginServerConfig['dynamicAccounts'], env = process.env): SecretBox | undefined {
    let text: string | undefined;
    let where = '';
    if (config.encryptionKeyFile) {
      where = `dynamicAccounts.encryptionKeyFile ${config.encryptionKeyFile}`;
      try {
        text = readFileSync(config.encryptionKeyFile, 'utf8');
      } catch (e) {
        throw new ScaleAgentError('FILE_UNREADABLE', `cannot read ${where}`, { cause: e });
      }
    } else if (config.encryptionKeyEnv) {
      where = `dynamicAccounts.encryptionKeyEnv ${config.encryptionKeyEnv}`;
      text = env[config.encryptionKeyEnv];
      if (!text) throw new ScaleAgentError('INVALID_INPUT', `${where}: environment variable not set`);
    }
    if (text === undefined) return undefined;
    const key = decodeEncryptionKey(text.trim());
    if (!key) {
      throw new ScaleAgentError('INVALID_INPUT', `${where}: expected 32 bytes as base64 or 64 hex characters`);
    }
    return new SecretBox(key);
  }

  seal(plaintext: string, aad: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(aad));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), body]);
  }

  open(sealed: Buffer, aad: string): string {
    if (sealed.length < 1 + IV_BYTES + TAG_BYTES || sealed[0] !== VERSION) {
      throw new ScaleAgentError('INVALID_INPUT', 'sealed secret has an unknown format');
    }
    const iv = sealed.subarray(1, 1 + IV_BYTES);
    const tag = sealed.subarray(1 + IV_BYTES, 1 + IV_BYTES + TAG_BYTES);
    const decipher = createDecipheriv('aes-256-gcm', this.key, iv);
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(tag);
    try {
      return Buffer.concat([decipher.update(sealed.subarray(1 + IV_BYTES + TAG_BYTES)), decipher.final()]).toString(
        'utf8',
      );
    } catch (e) {
      throw new ScaleAgentError('INVALID_INPUT', 'sealed secret does not decrypt with the configured key', {
        cause: e,
      });
    }
  }
}
