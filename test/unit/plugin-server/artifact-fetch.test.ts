/** PUT /artifacts/fetch/'s decoding: embedded/base64 only, every other body a 400 with a message that says why. */
import { describe, expect, it } from 'vitest';
import { fetchArtifactBytes } from '../../../src/plugin-server/api/artifact-fetch.js';
import { ScaleAgentError } from '../../../src/shared/errors.js';

const manifest = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  mode: blue\n';

function refusal(body: unknown): ScaleAgentError {
  try {
    fetchArtifactBytes(body);
  } catch (e) {
    if (e instanceof ScaleAgentError) return e;
    throw e;
  }
  throw new Error('expected a refusal');
}

describe('artifact fetch', () => {
  it('decodes an embedded/base64 artifact as Orca sends it', () => {
    const body = {
      type: 'embedded/base64',
      name: 'settings.yml',
      reference: Buffer.from(manifest).toString('base64'),
      customKind: false,
      metadata: {},
    };
    expect(fetchArtifactBytes(body).toString('utf8')).toBe(manifest);
    expect(fetchArtifactBytes({ type: 'embedded/base64', reference: '' })).toHaveLength(0);
    expect([...fetchArtifactBytes({ type: 'embedded/base64', reference: '/w==' })]).toEqual([255]);
  });

  it('refuses other types, naming the type and what is served', () => {
    const e = refusal({ type: 'github/file', reference: 'https://api.github.com/repos/acme/x/contents/a.yml' });
    expect(e.code).toBe('SA_ERR_INVALID_INPUT');
    expect(e.message).toMatch(/artifact type "github\/file" cannot be fetched here.*only embedded\/base64/);
  });

  it.each([
    ['no object', 'aGVsbG8=', /one artifact as a JSON object/],
    ['an array', [{ type: 'embedded/base64' }], /one artifact as a JSON object/],
    ['no type', { reference: 'aGVsbG8=' }, /no type/],
    ['no reference', { type: 'embedded/base64' }, /carries its content in "reference"/],
    ['bad base64', { type: 'embedded/base64', reference: 'aGVs bG8=' }, /not valid base64/],
    ['unpadded base64', { type: 'embedded/base64', reference: 'aGVsbG8' }, /not valid base64/],
  ])('refuses %s', (_what, body, message) => {
    const e = refusal(body);
    expect(e.code).toBe('SA_ERR_INVALID_INPUT');
    expect(e.message).toMatch(message);
  });
});
