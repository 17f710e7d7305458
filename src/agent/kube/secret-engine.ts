import { sleep } from '../../shared/clock.js';
import { ScaleAgentError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logging.js';
import {
  referenceParams,
  type OpenSecret,
  type SecretEngine,
  type SecretReference,
} from '../../shared/secrets/index.js';
import { Backoff, WATCH_BACKOFF } from '../backoff.js';
import { isForbidden, isGone, isNotFound, watchStatusError, type KubeClient } from './client.js';
import { JsonLineSplitter } from './json-lines.js';
import { streamChunks } from './stream-chunks.js';

const USAGE = 'k8s!n:SECRET!k:KEY';
/** The API server ends a watch after this; it is opened again from where it stood. */
const WATCH_TIMEOUT_SECONDS = 300;

interface SecretObject {
  metadata?: { resourceVersion?: string };
  data?: Record<string, string> | null;
}

/**
 * `k8s` references: a key of a Secret in the agent's own cluster, read with the agent's own credentials (its pod's
 * ServiceAccount) from its own namespace unless the reference names one (`!ns:`). Each Secret is read once and then
 * WATCHED, however many references name it, so a rotation reaches every account that uses it without a restart.
 * The requests are a GET of the Secret by name and a WATCH with `fieldSelector=metadata.name=<name>`: the API server
 * authorizes both against RBAC `resourceNames`, so the agent needs `get` and `watch` on exactly those Secrets
 * (which the compiler grants) and no `list`.
 */
export class KubernetesSecretEngine implements SecretEngine {
  readonly name = 'k8s';
  private readonly watched = new Map<string, WatchedSecret>();

  constructor(
    private readonly client: () => Promise<KubeClient>,
    /** The agent's namespace; undefined outside a pod without settings (then `!ns:` is needed). */
    private readonly namespace: string | undefined,
    private readonly log: Logger,
  ) {}

  async open(ref: SecretReference, onChange: () => void): Promise<OpenSecret> {
    const p = referenceParams(ref, ['n', 'k'], ['ns', 'b'], USAGE);
    const namespace = p.ns ?? this.namespace;
    if (!namespace) {
      throw new ScaleAgentError(
        'INVALID_INPUT',
        "the agent's namespace is unknown (not in a pod, no secrets.kubernetes.namespace): add !ns:NAMESPACE",
      );
    }
    const id = `${namespace}/${p.n}`;
    if (!this.watched.has(id)) {
      const client = await this.client();
      // Another reference to the same Secret may have started watching it meanwhile.
      if (!this.watched.has(id)) this.watched.set(id, new WatchedSecret(client, namespace, p.n, this.log));
    }
    const secret = this.watched.get(id) as WatchedSecret;
    const listener = { key: p.k, last: undefined as string | undefined, onChange };
    secret.listeners.add(listener);
    const close = (): void => {
      secret.listeners.delete(listener);
      if (secret.listeners.size > 0) return;
      secret.stop();
      if (this.watched.get(id) === secret) this.watched.delete(id);
    };
    try {
      await secret.ready;
      const value = secret.value(p.k);
      if (value === undefined)
        throw new ScaleAgentError('NOT_FOUND', `Secret ${id} has no key '${p.k}' (keys: ${secret.keys()})`);
      listener.last = value;
      return { value: Buffer.from(value, 'base64'), close };
    } catch (e) {
      close();
      throw e;
    }
  }

  /** Stops every watch (the agent is stopping). */
  stop(): void {
    for (const w of this.watched.values()) w.stop();
    this.watched.clear();
  }
}

/** One Secret, read and then watched while references to it are open. */
class WatchedSecret {
  readonly listeners = new Set<{ key: string; last: string | undefined; onChange(): void }>();
  readonly ready: Promise<void>;
  private data: Record<string, string> | undefined;
  private resourceVersion = '';
  private readonly abort = new AbortController();
  private readonly path: string;

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly name: string,
    private readonly log: Logger,
  ) {
    this.path = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
    this.ready = this.read();
    // Watched only once it could be read: a failed first read is reported to the opener, who tries again later.
    this.ready.then(
      () => void this.watchLoop(),
      () => undefined,
    );
  }

  value(key: string): string | undefined {
    const v = this.data?.[key];
    return v === undefined || v === '' ? undefined : v;
  }

  keys(): string {
    return (
      Object.keys(this.data ?? {})
        .sort()
        .join(', ') || 'none'
    );
  }

  stop(): void {
    this.abort.abort();
  }

  private async read(): Promise<void> {
    const id = `${this.namespace}/${this.name}`;
    let secret: SecretObject;
    try {
      // No abort signal: a short read, and node's HTTP/2 stream would raise an unhandled AbortError if the signal
      // fired after the answer was read (a reference closed right after its Secret was found missing).
      secret = await this.client.getJson<SecretObject>(`${this.path}/${encodeURIComponent(this.name)}`, {
        attempts: 3,
      });
    } catch (e) {
      if (isNotFound(e)) throw new ScaleAgentError('NOT_FOUND', `Secret ${id} not found`, { cause: e });
      if (isForbidden(e)) {
        throw new ScaleAgentError(
          'FORBIDDEN',
          `the agent may not get Secret ${id} (its RBAC must grant get and watch on this Secret by name)`,
          { cause: e },
        );
      }
      throw e;
    }
    this.data = secret.data ?? {};
    this.resourceVersion = secret.metadata?.resourceVersion ?? '';
  }

  private async watchLoop(): Promise<void> {
    const backoff = new Backoff(WATCH_BACKOFF);
    while (!this.abort.signal.aborted) {
      try {
        await this.watchOnce();
        backoff.reset();
      } catch (e) {
        if (this.abort.signal.aborted) return;
        if (!isGone(e)) {
          this.log.warn(
            { secret: `${this.namespace}/${this.name}`, error: (e as Error).message },
            'watch of a referenced Secret failed; reading it again',
          );
          await sleep(backoff.next(), this.abort.signal);
        }
        // 410 Gone (or any failure): read it again, so a change missed meanwhile is not lost.
        try {
          await this.read();
          this.notify();
        } catch {
          // deleted or refused for now: keep the value in use, and watch again after the backoff
        }
      }
    }
  }

  private async watchOnce(): Promise<void> {
    const query = new URLSearchParams({
      watch: 'true',
      fieldSelector: `metadata.name=${this.name}`,
      resourceVersion: this.resourceVersion,
      allowWatchBookmarks: 'true',
      timeoutSeconds: String(WATCH_TIMEOUT_SECONDS),
    });
    const { stream } = await this.client.get(`${this.path}?${query.toString()}`, { signal: this.abort.signal });
    const splitter = new JsonLineSplitter();
    try {
      for await (const chunk of streamChunks(stream)) {
        for (const line of splitter.push(chunk)) {
          const event = JSON.parse(line.toString('utf8')) as { type: string; object: SecretObject };
          if (event.type === 'ERROR') throw watchStatusError(event.object as { code?: number });
          const rv = event.object.metadata?.resourceVersion;
          if (rv) this.resourceVersion = rv;
          if (event.type === 'ADDED' || event.type === 'MODIFIED') {
            this.data = event.object.data ?? {};
            this.notify();
          }
          // DELETED: the value in use stays (accounts keep their connections); a new Secret of that name is ADDED.
        }
      }
    } finally {
      if (!stream.closed) stream.close();
    }
  }

  /** Tells each reference whose key now holds another value (a key that vanished keeps its last value). */
  private notify(): void {
    for (const l of this.listeners) {
      const v = this.value(l.key);
      if (v === undefined || v === l.last) continue;
      l.last = v;
      l.onChange();
    }
  }
}
