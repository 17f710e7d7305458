import { ScaleAgentError } from '../errors.js';
import { parseSecretReference, type SecretReference } from './reference.js';

/** A secret read through an engine, kept current until closed. */
export interface OpenSecret {
  /** The value when opened. */
  readonly value: Buffer;
  /** Stops watching (and releases what the engine shares between references). */
  close(): void;
}

/**
 * One secret engine (`k8s`, `vault`): reads a reference's value and, while it is open, calls `onChange` when that
 * value changes (a rotated Secret), so its user can reconnect with the new one.
 */
export interface SecretEngine {
  readonly name: string;
  open(ref: SecretReference, onChange: () => void, signal?: AbortSignal): Promise<OpenSecret>;
}

/**
 * Engines kork and Armory know that no test here can reach (cloud object stores and secret managers): a reference
 * to one is refused with this reason rather than read wrong. docs/secrets.md says the same.
 */
const UNSUPPORTED: Record<string, string> = {
  s3: 'Amazon S3',
  gcs: 'Google Cloud Storage',
  'secrets-manager': 'AWS Secrets Manager',
  'google-secrets-manager': 'Google Secret Manager',
  'azure-key-vault': 'Azure Key Vault',
};

/**
 * The one place a secret reference becomes a value: parses it, picks its engine by name, and says clearly when the
 * engine is unknown, not supported, or not configured. Every secret-bearing field goes through here.
 */
export class SecretResolver {
  private readonly engines = new Map<string, SecretEngine>();

  constructor(
    engines: readonly SecretEngine[],
    /** Engines this process knows but whose settings are missing: name → what to configure. */
    private readonly unconfigured: Readonly<Record<string, string>> = {},
  ) {
    for (const e of engines) this.engines.set(e.name, e);
  }

  /** The engine of a reference (parsed), or an error naming the reference and why it cannot be read. */
  engineOf(text: string): { ref: SecretReference; engine: SecretEngine } {
    const ref = parseSecretReference(text);
    const engine = this.engines.get(ref.engine);
    if (engine) return { ref, engine };
    const product = UNSUPPORTED[ref.engine];
    if (product) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        `secret reference ${text}: engine '${ref.engine}' (${product}) is not supported; use k8s or vault, or mount ` +
          'the secret as a file (docs/secrets.md)',
      );
    }
    const hint = this.unconfigured[ref.engine];
    if (hint) throw new ScaleAgentError('INVALID_INPUT', `secret reference ${text}: ${hint}`);
    const known = [...this.engines.keys(), ...Object.keys(this.unconfigured)].sort();
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `secret reference ${text}: unknown engine '${ref.engine}' (known: ${known.join(', ') || 'none'})`,
    );
  }

  /**
   * Reads a reference and watches it: `onChange` is called (with nothing: reopen to read) when its value changes.
   * Errors name the reference, never a value.
   */
  async open(text: string, onChange: () => void, signal?: AbortSignal): Promise<OpenSecret> {
    const { ref, engine } = this.engineOf(text);
    let secret: OpenSecret;
    try {
      secret = await engine.open(ref, onChange, signal);
    } catch (e) {
      throw aboutReference(text, e);
    }
    const b = ref.params.get('b');
    // `!b:true` (Armory's vault syntax, accepted for every engine): the stored value is base64 of the real one.
    if (b !== undefined && b !== 'true' && b !== 'false') {
      secret.close();
      throw new ScaleAgentError('INVALID_INPUT', `secret reference ${text}: parameter 'b' must be true or false`);
    }
    return b === 'true'
      ? { value: Buffer.from(secret.value.toString('utf8'), 'base64'), close: () => secret.close() }
      : secret;
  }
}

/** An engine's error with the reference it was reading in front (once): the reader then knows which secret failed. */
function aboutReference(text: string, e: unknown): ScaleAgentError {
  const message = (e as Error).message ?? String(e);
  if (message.startsWith('secret reference '))
    return e instanceof ScaleAgentError ? e : new ScaleAgentError('INTERNAL', message);
  const kind = e instanceof ScaleAgentError ? e.kind : 'UNAVAILABLE';
  return new ScaleAgentError(kind, `secret reference ${text}: ${message}`, { cause: e });
}
