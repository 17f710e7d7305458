import { ScaleAgentError } from '../../shared/errors.js';

/**
 * `PUT /artifacts/fetch/` (Clouddriver's ArtifactController): the artifact's bytes. Only `embedded/base64` is served
 * here, because its bytes travel in the request itself; every other type needs the artifact account's credentials,
 * which an upstream Clouddriver holds: in front mode (spinnaker.upstream) they go there, else they are refused with a
 * message saying how to enable it.
 */
export const EMBEDDED_BASE64 = 'embedded/base64';

/** Java's basic Base64 decoder, which Clouddriver's embedded artifacts use: the standard alphabet, padded, no spaces. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

export function fetchArtifactBytes(body: unknown): Buffer {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      'the body must be one artifact as a JSON object ({type, reference, ...})',
    );
  }
  const { type, reference } = body as { type?: unknown; reference?: unknown };
  if (typeof type !== 'string' || type === '') {
    throw new ScaleAgentError('INVALID_INPUT', 'the artifact has no type', {
      details: [{ path: 'type', message: 'required' }],
    });
  }
  if (type !== EMBEDDED_BASE64) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `artifact type "${type}" cannot be fetched here: the plugin-server serves only ${EMBEDDED_BASE64} artifacts ` +
        'locally; set spinnaker.upstream.baseUrl (front mode, docs/spinnaker.md) to fetch other types through Clouddriver',
      { details: [{ path: 'type', message: `only ${EMBEDDED_BASE64} is served` }] },
    );
  }
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
