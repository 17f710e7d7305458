import { ScaleAgentError } from '../../shared/errors.js';
import type { ArtifactsConfig, HttpArtifactAccountConfig } from '../config.js';
import { EMBEDDED_BASE64, embeddedBytes } from './embedded.js';
import { downloadHttpFile, HTTP_FILE } from './http-file.js';

/**
 * One entry of `GET /artifacts/credentials` as Clouddriver's ArtifactController serialises an ArtifactCredentials:
 * its name, the artifact types it fetches (what Deck's artifact pickers filter on) and its credentials type.
 */
export interface ArtifactCredentialsView {
  name: string;
  types: string[];
  type: string;
}

/** Clouddriver's always-present account for embedded artifacts (EmbeddedArtifactAccount). */
export const EMBEDDED_ACCOUNT: ArtifactCredentialsView = {
  name: 'embedded-artifact',
  // Clouddriver's also lists remote/base64 (its artifact store), which this server has not.
  types: [EMBEDDED_BASE64],
  type: 'artifacts-embedded',
};

const NO_ARTIFACTS: ArtifactsConfig = { http: [], timeoutMs: 30000, maxBytes: 16 * 1024 * 1024 };

/** The fields of a kork Artifact that choose how it is fetched. */
interface ArtifactRequest {
  type: string;
  reference: unknown;
  artifactAccount: string | undefined;
}

function artifactOf(body: unknown): ArtifactRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ScaleAgentError(
      'INVALID_INPUT',
      'the body must be one artifact as a JSON object ({type, reference, ...})',
    );
  }
  const { type, reference, artifactAccount } = body as Record<string, unknown>;
  if (typeof type !== 'string' || type === '') {
    throw new ScaleAgentError('INVALID_INPUT', 'the artifact has no type', {
      details: [{ path: 'type', message: 'required' }],
    });
  }
  return { type, reference, artifactAccount: typeof artifactAccount === 'string' ? artifactAccount : undefined };
}

/**
 * What the plugin-server fetches itself (docs/spinnaker.md, Artifacts): embedded/base64 always, http/file through the
 * accounts of `spinnaker.artifacts.http`. Every other type needs credentials only Clouddriver holds (front mode).
 */
export class ArtifactCatalogue {
  private readonly config: ArtifactsConfig;

  constructor(config: ArtifactsConfig | undefined) {
    this.config = config ?? NO_ARTIFACTS;
  }

  /** `GET /artifacts/credentials`: the embedded account first, then the http accounts as configured. */
  credentials(): ArtifactCredentialsView[] {
    return [
      EMBEDDED_ACCOUNT,
      ...this.config.http.map((a) => ({ name: a.name, types: [HTTP_FILE], type: 'artifacts-http' })),
    ];
  }

  /** Whether a type is fetched here; the others go to the upstream Clouddriver in front mode. */
  serves(type: unknown): boolean {
    return type === EMBEDDED_BASE64 || (type === HTTP_FILE && this.config.http.length > 0);
  }

  /** `PUT /artifacts/fetch/`: the artifact's bytes, or an error naming what is wrong with the request. */
  async fetch(body: unknown): Promise<Buffer> {
    const artifact = artifactOf(body);
    if (artifact.type === EMBEDDED_BASE64) return embeddedBytes(artifact.reference);
    if (artifact.type === HTTP_FILE && this.config.http.length > 0) {
      const account = this.httpAccount(artifact.artifactAccount);
      if (typeof artifact.reference !== 'string' || artifact.reference === '') {
        throw new ScaleAgentError('INVALID_INPUT', `an ${HTTP_FILE} artifact names its URL in "reference"`, {
          details: [{ path: 'reference', message: 'required' }],
        });
      }
      return downloadHttpFile(account, artifact.reference, this.config);
    }
    const served = this.credentials().flatMap((c) => c.types);
    throw new ScaleAgentError(
      'INVALID_INPUT',
      `artifact type "${artifact.type}" cannot be fetched here: this plugin-server fetches only ` +
        `${[...new Set(served)].join(' and ')} artifacts (spinnaker.artifacts); set spinnaker.upstream.baseUrl ` +
        '(front mode, docs/spinnaker.md) to fetch other types through Clouddriver',
      { details: [{ path: 'type', message: `not one of ${[...new Set(served)].join(', ')}` }] },
    );
  }

  /** The account an http/file artifact names; Clouddriver, too, needs one and answers 404 for an unknown one. */
  private httpAccount(name: string | undefined): HttpArtifactAccountConfig {
    const names = this.config.http.map((a) => a.name).join(', ');
    if (!name) {
      throw new ScaleAgentError('INVALID_INPUT', `an ${HTTP_FILE} artifact must name its artifactAccount (${names})`, {
        details: [{ path: 'artifactAccount', message: 'required' }],
      });
    }
    const account = this.config.http.find((a) => a.name === name);
    if (!account) {
      throw new ScaleAgentError(
        'NOT_FOUND',
        `Credentials '${name}' supporting artifact type '${HTTP_FILE}' cannot be found (http artifact accounts: ${names})`,
      );
    }
    return account;
  }
}
