import { ScaleAgentError } from '../errors.js';

/**
 * A secret reference in the syntax of Spinnaker's kork-secrets (and Armory's agent, which reads the same):
 * `encrypted:ENGINE!NAME:VALUE!...` for the value itself, `encryptedFile:ENGINE!NAME:VALUE!...` for a value used as a
 * file's contents (a kubeconfig). Parameter names are letters and digits; a value may contain ':' (only the first
 * ':' of a pair separates), never '!'. docs/secrets.md lists the engines and their parameters.
 */
export interface SecretReference {
  /** The reference as written: safe to show (it names where the secret is, never the secret). */
  text: string;
  engine: string;
  /** `encryptedFile:`: the value stands for a file's contents. */
  file: boolean;
  params: ReadonlyMap<string, string>;
}

const PREFIXES = [
  ['encrypted:', false],
  ['encryptedFile:', true],
] as const;
const PARAM_NAME = /^[a-zA-Z0-9]+$/;

/** Whether a config value is meant as a secret reference (its prefix), so that a malformed one is an error. */
export function isSecretReference(value: unknown): value is string {
  return typeof value === 'string' && PREFIXES.some(([p]) => value.startsWith(p));
}

/** Parses a reference; a value with the prefix but not the syntax is an INVALID_INPUT naming it and the problem. */
export function parseSecretReference(text: string): SecretReference {
  const prefix = PREFIXES.find(([p]) => text.startsWith(p));
  if (!prefix) throw malformed(text, "it starts with neither 'encrypted:' nor 'encryptedFile:'");
  const [engine, ...pairs] = text.slice(prefix[0].length).split('!');
  if (!engine) throw malformed(text, 'the engine name is missing');
  if (pairs.length === 0) throw malformed(text, 'it has no parameters (NAME:VALUE after a !)');
  const params = new Map<string, string>();
  for (const pair of pairs) {
    const i = pair.indexOf(':');
    const name = i < 0 ? pair : pair.slice(0, i);
    if (i < 0 || !PARAM_NAME.test(name)) throw malformed(text, `'${pair}' is not NAME:VALUE`);
    if (params.has(name)) throw malformed(text, `parameter '${name}' is given twice`);
    params.set(name, pair.slice(i + 1));
  }
  return { text, engine, file: prefix[1], params };
}

/**
 * The named parameters of a reference for one engine: each required one present and not empty, no unknown ones
 * (a typo would otherwise read another secret, or silently nothing).
 */
export function referenceParams<R extends string, O extends string>(
  ref: SecretReference,
  required: readonly R[],
  optional: readonly O[],
  describe: string,
): Record<R, string> & Partial<Record<O, string>> {
  const out: Record<string, string> = {};
  for (const name of required) {
    const v = ref.params.get(name);
    if (!v) throw malformed(ref.text, `parameter '${name}' is missing (${describe})`);
    out[name] = v;
  }
  for (const [name, v] of ref.params) {
    if ((required as readonly string[]).includes(name)) continue;
    if (!(optional as readonly string[]).includes(name)) {
      throw malformed(ref.text, `unknown parameter '${name}' (${describe})`);
    }
    out[name] = v;
  }
  return out as Record<R, string> & Partial<Record<O, string>>;
}

/**
 * What is wrong with a config field's reference, for a config error at its line: its syntax, or its form — kork's
 * `encrypted:` gives the value itself and `encryptedFile:` a file's contents, so a field holding a value (a URL)
 * takes the first and a field naming a file the second. Undefined when it is fine.
 */
export function referenceProblem(text: string, file: boolean, what: string): string | undefined {
  try {
    const ref = parseSecretReference(text);
    if (ref.file === file) return undefined;
    const rest = text.slice(text.indexOf(':') + 1);
    return file
      ? `${what} is a file: write encryptedFile:${rest}`
      : `${what} is a value, not a file: write encrypted:${rest}`;
  } catch (e) {
    return (e as Error).message;
  }
}

function malformed(text: string, problem: string): ScaleAgentError {
  return new ScaleAgentError('INVALID_INPUT', `secret reference ${text} is malformed: ${problem}`);
}
