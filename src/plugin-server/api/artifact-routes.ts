import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { ArtifactCatalogue } from '../artifacts/catalogue.js';

export interface ArtifactRouteDeps {
  catalogue: ArtifactCatalogue;
  /** Front mode: types not fetched here go to the upstream Clouddriver, as sent, and so does its account list. */
  forward?: ((request: FastifyRequest, reply: FastifyReply) => unknown) | undefined;
}

/**
 * Clouddriver's ArtifactController as far as the plugin-server fetches artifacts itself (docs/spinnaker.md,
 * Artifacts): the list Deck's artifact pickers read, and the fetch Orca's manifest stages and Rosco call.
 */
export const artifactRoutes: FastifyPluginAsync<ArtifactRouteDeps> = async (app, deps) => {
  // In front mode the list is Clouddriver's (no route here, so it is proxied): its accounts do the fetching.
  if (!deps.forward) app.get('/artifacts/credentials', async () => deps.catalogue.credentials());

  app.put('/artifacts/fetch', async (request, reply) => {
    const type = (request.body as { type?: unknown } | null)?.type;
    if (deps.forward && typeof type === 'string' && !deps.catalogue.serves(type)) {
      return deps.forward(request, reply);
    }
    return reply.type('application/octet-stream').send(await deps.catalogue.fetch(request.body));
  });
};
