import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ScaleAgentError } from '../shared/errors.js';
import { decodeEncryptionKey, isPeerSecret } from '../shared/secret-formats.js';
import type { Topology } from './topology.js';

/** Secrets synth generates for the plugin-server when the topology names no Secret of the user's for them. */
export interface GeneratedSecrets {
  /** dynamicAccounts.encryptionKeyFile: 32 random bytes, base64. */
  dynamicAccountsKey?: string;
  /** http.peerAuth.secretFile: 32 random bytes, hex. */
  peerSecret?: string;
}

/** Their files in --certs-dir, beside the certificates, kept so a re-run neither rotates nor loses them. */
export const GENERATED_SECRET_FILES = {
  dynamicAccountsKey: 'dynamic-accounts.key',
  peerSecret: 'peer.secret',
} as const;

const SPECS = {
  dynamicAccountsKey: {
    make: () => randomBytes(32).toString('base64'),
    valid: (text: string) => decodeEncryptionKey(text) !== undefined,
    what: '32 bytes as base64 or 64 hex characters',
  },
  peerSecret: {
    make: () => randomBytes(32).toString('hex'),
    valid: isPeerSecret,
    what: 'one word of at least 32 characters',
  },
} as const;

/**
 * Loads the topology's generated secrets from `dir`, creating those missing (mode 0600). A file that is there but
 * unusable is an error naming it, never replaced: a new encryption key would leave every stored dynamic account's
 * kubeconfig unreadable.
 */
export async function ensureTopologySecrets(
  t: Topology,
  dir: string,
): Promise<{ secrets: GeneratedSecrets; written: string[] }> {
  const wanted: (keyof GeneratedSecrets)[] = [];
  if (t.pluginServer.dynamicAccountsKey.source === 'generate') wanted.push('dynamicAccountsKey');
  if (t.pluginServer.peerSecret?.source === 'generate') wanted.push('peerSecret');
  const secrets: GeneratedSecrets = {};
  const written: string[] = [];
  for (const name of wanted) {
    const file = join(dir, GENERATED_SECRET_FILES[name]);
    const spec = SPECS[name];
    let text: string | undefined;
    try {
      text = (await readFile(file, 'utf8')).trim();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') {
        throw new ScaleAgentError('FILE_UNREADABLE', `cannot read ${file}`, { cause: e });
      }
    }
    if (text === undefined) {
      text = spec.make();
      await mkdir(dir, { recursive: true });
      await writeFile(file, `${text}\n`, { mode: 0o600, flag: 'wx' });
      written.push(GENERATED_SECRET_FILES[name]);
    } else if (!spec.valid(text)) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        `${file}: expected ${spec.what}; fix it, or remove it to generate a new one`,
        {
          details: [{ file, message: `expected ${spec.what}` }],
        },
      );
    }
    secrets[name] = text;
  }
  return { secrets, written };
}
