import { ScaleAgentError } from '../../shared/errors.js';

/** The type whose bytes travel in the artifact itself (what Bake (Manifest) returns): always served. */
export const EMBEDDED_BASE64 = 'embedded/base64';

/** Java's basic Base64 decoder, which Clouddriver's embedded artifacts use: the standard alphabet, padded, no spaces. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** An embedded/base64 artifact's bytes, decoded from its `reference` as Clouddriver's EmbeddedArtifactCredentials does. */
export function embeddedBytes(reference: unknown): Buffer {
  if (typeof reference !== 'string') {
    throw new ScaleAgentError('INVALID_INPUT', `an ${EMBEDDED_BASE64} artifact carries its content in "reference"`, {
      details: [{ path: 'reference', message: 'required' }],
    });
  }
  if (!BASE64.test(reference)) {
    throw new ScaleAgentError('INVALID_INPUT', `the ${EMBEDDED_BASE64} artifact's reference is not valid base64`, {
      details: [{ path: 'reference', message: 'not base64' }],
    });
  }
  return Buffer.from(reference, 'base64');
}
