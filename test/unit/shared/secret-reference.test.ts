import { describe, expect, it } from 'vitest';
import {
  isSecretReference,
  parseSecretReference,
  referenceParams,
  SecretResolver,
  type SecretEngine,
} from '../../../src/shared/secrets/index.js';

describe('secret references (kork syntax)', () => {
  it('parses the engine, the file flag and the parameters; a value may hold ":"', () => {
    const ref = parseSecretReference('encryptedFile:k8s!n:kubeconfigs!k:prod:eu!ns:spinnaker');
    expect(ref).toMatchObject({ engine: 'k8s', file: true });
    expect(Object.fromEntries(ref.params)).toEqual({ n: 'kubeconfigs', k: 'prod:eu', ns: 'spinnaker' });
    expect(parseSecretReference('encrypted:vault!e:secret!p:a/b!k:token')).toMatchObject({
      engine: 'vault',
      file: false,
    });
  });

  it('tells a reference from a path by its prefix', () => {
    expect(isSecretReference('encrypted:k8s!n:a!k:b')).toBe(true);
    expect(isSecretReference('encryptedFile:vault!e:x')).toBe(true);
    expect(isSecretReference('/etc/kubeconfigs/prod')).toBe(false);
    expect(isSecretReference(undefined)).toBe(false);
  });

  it.each([
    ['encrypted:k8s', /no parameters/],
    ['encrypted:!n:a', /engine name is missing/],
    ['encrypted:k8s!n', /'n' is not NAME:VALUE/],
    ['encrypted:k8s!n-x:a', /'n-x:a' is not NAME:VALUE/],
    ['encrypted:k8s!n:a!n:b', /'n' is given twice/],
  ])('refuses %s, naming it', (text, problem) => {
    expect(() => parseSecretReference(text)).toThrow(problem);
    expect(() => parseSecretReference(text)).toThrow(`secret reference ${text} is malformed`);
  });

  it("checks an engine's parameters: required ones present, no unknown one", () => {
    const ref = parseSecretReference('encrypted:k8s!n:a!k:b!x:c');
    expect(() => referenceParams(ref, ['n', 'k'], ['ns'], 'k8s!n:SECRET!k:KEY')).toThrow(/unknown parameter 'x'/);
    expect(() => referenceParams(parseSecretReference('encrypted:k8s!n:a'), ['n', 'k'], [], 'usage')).toThrow(
      /parameter 'k' is missing/,
    );
  });
});

describe('SecretResolver', () => {
  const echo: SecretEngine = {
    name: 'echo',
    open: (ref) => Promise.resolve({ value: Buffer.from(ref.params.get('v') ?? ''), close: () => undefined }),
  };
  const failing: SecretEngine = { name: 'failing', open: () => Promise.reject(new Error('backend said no')) };
  const resolver = new SecretResolver([echo, failing], { vault: 'vault references need secrets.vault' });

  it('opens a reference with its engine, and decodes !b:true (base64)', async () => {
    expect((await resolver.open('encrypted:echo!v:plain', () => undefined)).value.toString()).toBe('plain');
    const b64 = Buffer.from('decoded').toString('base64');
    expect((await resolver.open(`encrypted:echo!v:${b64}!b:true`, () => undefined)).value.toString()).toBe('decoded');
  });

  it('refuses unsupported, unconfigured and unknown engines with the reference and the reason', async () => {
    await expect(resolver.open('encryptedFile:s3!r:x!f:y', () => undefined)).rejects.toThrow(
      "secret reference encryptedFile:s3!r:x!f:y: engine 's3' (Amazon S3) is not supported",
    );
    await expect(resolver.open('encrypted:gcs!b:x!f:y', () => undefined)).rejects.toThrow(/Google Cloud Storage/);
    await expect(resolver.open('encrypted:vault!e:a!p:b!k:c', () => undefined)).rejects.toThrow(
      'secret reference encrypted:vault!e:a!p:b!k:c: vault references need secrets.vault',
    );
    await expect(resolver.open('encrypted:nope!a:b', () => undefined)).rejects.toThrow(
      "unknown engine 'nope' (known: echo, failing, vault)",
    );
  });

  it("puts the reference in front of an engine's error", async () => {
    await expect(resolver.open('encrypted:failing!a:b', () => undefined)).rejects.toThrow(
      'secret reference encrypted:failing!a:b: backend said no',
    );
  });
});
