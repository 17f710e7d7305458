import { intentFor, KubeClient, objectPath, type DiscoveredResource } from '../../agent/index.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeKubeIntent, isKubeStatus, ScaleAgentError, type KubeRequestIntent } from '../../shared/errors.js';

/** One object as the CLI applies it (synth's output: apiVersion, kind, metadata.name, maybe metadata.namespace). */
export type Manifest = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
};

/** A request the caller must be allowed to make, as SelfSubjectAccessReview's resourceAttributes spell it. */
export interface Permission {
  verb: string;
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

const FIELD_MANAGER = 'scale-agent';
/** A cluster that does not answer /version within this long is reported unreachable rather than waited for. */
const REACH_TIMEOUT_MS = 20_000;
const ATTEMPTS = 3;
const POLL_MS = 250;

export const describePermission = (p: Permission): string => describeKubeIntent(intentOf(p));

function intentOf(p: Permission): KubeRequestIntent {
  const resource = (p.group ? `${p.resource}.${p.group}` : p.resource) + (p.subresource ? `/${p.subresource}` : '');
  return {
    verb: p.verb,
    resource,
    ...(p.namespace ? { namespace: p.namespace } : {}),
    ...(p.name ? { name: p.name } : {}),
  };
}

/**
 * The target cluster as the admin kubeconfig reaches it, through the agent's own Kubernetes access layer (the same
 * kubeconfig handling, TLS and error translation the agent uses). Only what minting a kubeconfig needs: who the
 * caller is, what it may do, server-side apply, and plain JSON requests.
 */
export class TargetCluster {
  private constructor(
    readonly client: KubeClient,
    readonly where: string,
  ) {}

  /** Connects and proves the API server answers, so an unreachable cluster fails before anything else. */
  static async connect(kubeconfigFile: string, context: string | undefined): Promise<TargetCluster> {
    const client = await KubeClient.create({ kubeconfigFile, ...(context !== undefined ? { context } : {}) });
    const where = `${client.server.origin} (kubeconfig ${kubeconfigFile}${context ? `, context ${context}` : ''})`;
    try {
      await client.getJson('/version', { signal: AbortSignal.timeout(REACH_TIMEOUT_MS), attempts: ATTEMPTS });
    } catch (e) {
      client.close();
      const kind = e instanceof ScaleAgentError && e.kind === 'UNAUTHENTICATED' ? 'UNAUTHENTICATED' : 'UNAVAILABLE';
      throw new ScaleAgentError(
        kind,
        `cannot reach the target cluster's API server ${where}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
    return new TargetCluster(client, where);
  }

  /** The caller's user name (SelfSubjectReview, Kubernetes ≥ 1.28); undefined where the server has no such API. */
  async whoAmI(): Promise<string | undefined> {
    try {
      const r = await this.client.request<{ status?: { userInfo?: { username?: string } } }>(
        'POST',
        '/apis/authentication.k8s.io/v1/selfsubjectreviews',
        { body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' }, attempts: ATTEMPTS },
      );
      return r.status?.userInfo?.username;
    } catch {
      return undefined;
    }
  }

  /** The permissions among `wanted` the caller lacks (SelfSubjectAccessReview each; no change to the cluster). */
  async missing(wanted: Permission[]): Promise<Permission[]> {
    const answers = await Promise.all(
      wanted.map(async (p) => {
        const r = await this.client.request<{ status?: { allowed?: boolean } }>(
          'POST',
          '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews',
          {
            body: {
              apiVersion: 'authorization.k8s.io/v1',
              kind: 'SelfSubjectAccessReview',
              spec: { resourceAttributes: { ...p } },
            },
            attempts: ATTEMPTS,
          },
        );
        return r.status?.allowed === true;
      }),
    );
    return wanted.filter((_, i) => !answers[i]);
  }

  /** The REST resource serving a manifest's apiVersion and kind. */
  resourceOf(m: Manifest): Promise<DiscoveredResource> {
    return this.client.discovery.forManifest(m.apiVersion, m.kind);
  }

  /** What applying `m` takes: create (it may not exist yet) and patch (server-side apply). */
  async applyPermissions(m: Manifest): Promise<Permission[]> {
    const r = await this.resourceOf(m);
    const at = {
      group: r.group,
      resource: r.resource,
      ...(r.namespaced && m.metadata.namespace ? { namespace: m.metadata.namespace } : {}),
      name: m.metadata.name,
    };
    return [
      { verb: 'create', ...at },
      { verb: 'patch', ...at },
    ];
  }

  /**
   * Server-side apply, forcing conflicts: the topology is the source of truth for these objects, as under synth.
   * `dryRun` runs authorization (RBAC's escalation check included), admission and validation without storing.
   */
  async apply(m: Manifest, options: { dryRun?: boolean } = {}): Promise<void> {
    const r = await this.resourceOf(m);
    const ns = r.namespaced ? m.metadata.namespace : undefined;
    await this.client.request('PATCH', objectPath(r, ns, m.metadata.name), {
      query: { fieldManager: FIELD_MANAGER, force: 'true', dryRun: options.dryRun ? 'All' : undefined },
      body: m,
      contentType: 'application/apply-patch+yaml',
      intent: intentFor('patch', r, ns, m.metadata.name),
      attempts: ATTEMPTS,
    });
  }

  request<T>(method: string, path: string, body?: unknown, intent?: KubeRequestIntent): Promise<T> {
    return this.client.request<T>(method, path, {
      ...(body !== undefined ? { body } : {}),
      ...(intent ? { intent } : {}),
      attempts: ATTEMPTS,
    });
  }

  /**
   * GETs `path` until `pick` finds what a controller fills in (a 404 counts as not yet); undefined after `timeoutMs`.
   */
  async waitFor<T, O = Record<string, unknown>>(
    path: string,
    intent: KubeRequestIntent,
    pick: (o: O) => T | undefined,
    timeoutMs: number,
  ): Promise<T | undefined> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      try {
        const found = pick(await this.request<O>('GET', path, undefined, intent));
        if (found !== undefined) return found;
      } catch (e) {
        if (!isKubeStatus(e, 404)) throw e;
      }
      if (Date.now() > deadline) return undefined;
      await sleep(POLL_MS);
    }
  }

  close(): void {
    this.client.close();
  }
}
