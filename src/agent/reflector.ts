import { realClock, sleep, type Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logging.js';
import { ChangeType, type Change } from '../shared/proto.js';
import { Backoff, WATCH_BACKOFF, type BackoffOptions } from './backoff.js';
import type { SyncBudget } from './sync-budget.js';
import { watchStatusError, type KubeApiError, type KubeClient } from './kube/client.js';
import { JsonLineSplitter } from './kube/json-lines.js';
import { streamChunks } from './kube/stream-chunks.js';
import {
  apiVersionOfResource,
  collectionPath,
  isMetadataOnly,
  PARTIAL_OBJECT_METADATA,
  PARTIAL_OBJECT_METADATA_LIST,
  type ApiResource,
} from './kube/resources.js';
import {
  classifyFailure,
  initialLoopState,
  InitialListIncomplete,
  nextReflectorStep,
  nextRequest,
  StallGuard,
  watchTimeoutSeconds,
  type Failure,
  type ReflectorEvent,
  type ReflectorLoopState,
  type ReflectorStep,
  type WatchRestartReason,
} from './reflector-step.js';

/** What one reflector covers: an account's kind, in one namespace or ('') all of them. */
export interface WatchScope {
  account: string;
  resource: ApiResource;
  namespace: string;
}

export const scopeId = (s: WatchScope): string => `${s.account}/${s.resource.group}/${s.resource.kind}/${s.namespace}`;

/**
 * Where a reflector's output goes (the send queue). hasRoom/waitForRoom are the backpressure: while there is no
 * room the reflector stops reading its HTTP stream, so the API server (not the agent) holds what is unread.
 */
export interface ReflectorSink {
  syncStart(scope: WatchScope): void;
  change(scope: WatchScope, change: Change): void;
  syncEnd(scope: WatchScope, resourceVersion: string): void;
  bookmark(scope: WatchScope, resourceVersion: string): void;
  hasRoom(): boolean;
  waitForRoom(signal: AbortSignal): Promise<void>;
}

export interface ReflectorHooks {
  /** First 403 of this scope (reported once; later retries are quiet until it succeeds). */
  onForbidden?(scope: WatchScope, error: KubeApiError): void;
  /** A scope that was forbidden listed successfully. */
  onAllowed?(scope: WatchScope): void;
  /** 404: the resource disappeared (CRD deleted); discovery should run again. */
  onNotFound?(scope: WatchScope): void;
  /** Objects of an initial list read so far, and how many it holds when the API server says (LIST only). */
  onListProgress?(scope: WatchScope, listed: number, total: number | undefined): void;
  onSynced?(scope: WatchScope, durationMs: number, objects: number): void;
  onWatchRestart?(scope: WatchScope, reason: WatchRestartReason): void;
}

export interface ReflectorOptions {
  client: KubeClient;
  scope: WatchScope;
  sink: ReflectorSink;
  logger: Logger;
  hooks?: ReflectorHooks;
  /** LIST page size. */
  pageSize?: number;
  /** Try streaming lists (WATCH with sendInitialEvents) before falling back to LIST. */
  streamingLists?: boolean;
  forbiddenRetryMs?: number;
  /** Server-side field selector (omitNamespaces). */
  fieldSelector?: string;
  backoff?: BackoffOptions;
  /** Ask for metadata only (PartialObjectMetadata); always so for Secrets. */
  metadataOnly?: boolean;
  /** Log a 403 at debug level only (internal watches whose absence is not the operator's business). */
  quietForbidden?: boolean;
  /** Agent-wide limit of concurrent initial lists; none = unlimited. */
  syncBudget?: SyncBudget;
  /** Bounds of the random server-side watch timeout (client-go picks 5–10 minutes). */
  watchTimeoutSeconds?: [number, number];
  /**
   * A streaming list that delivers nothing for this long before its initial-events-end bookmark is abandoned, and
   * this scope falls back to paginated LIST. Seen on a loaded API server: an empty namespace's streaming list that
   * never closed, holding a sync slot and the account's readiness forever. Default 20 s.
   */
  initialListStallMs?: number;
  /** Time and randomness (backoff jitter, watch timeouts): real ones unless a test brings its own. */
  clock?: Clock;
  random?: () => number;
}

export type ReflectorState = 'pending' | 'listing' | 'watching' | 'backoff' | 'forbidden' | 'stopped';

interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: KubeObject;
}

interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    annotations?: Record<string, string>;
    managedFields?: unknown;
    [key: string]: unknown;
  };
  [key: string]: unknown;
}

interface ListPage {
  metadata?: { resourceVersion?: string; continue?: string; remainingItemCount?: number };
  items?: KubeObject[];
}

const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';
// kubectl apply copies the whole object, a Secret's data included, into this annotation.
const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * List+watch of one scope that never gives up: paginated LIST (or a streaming list), then WATCH with bookmarks,
 * resuming from the last resourceVersion; 410 Gone (also an expired continue token) relists; every other error
 * backs off with jitter; 403 is reported once and retried on a slow timer. It keeps only the resourceVersion,
 * never the objects.
 */
export class Reflector {
  readonly scope: WatchScope;
  state: ReflectorState = 'pending';
  /** Where the watch continues from; undefined means a full list is needed. */
  resourceVersion: string | undefined;
  synced = false;
  lastError: string | undefined;
  events = 0;
  relists = 0;
  /** Failed list/watch requests (403s included): a steady count over time means no hot loop. */
  failures = 0;
  lastSyncMs: number | undefined;

  private readonly abort = new AbortController();
  private readonly backoff: Backoff;
  private readonly metadataOnly: boolean;
  private readonly clock: Clock;
  private readonly random: () => number;
  private streamingLists: boolean;
  private forbidden = false;
  private forbiddenStreak = 0;
  private lastGoneAt: number | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly options: ReflectorOptions) {
    this.scope = options.scope;
    this.clock = options.clock ?? realClock;
    this.random = options.random ?? Math.random;
    this.backoff = new Backoff(options.backoff ?? WATCH_BACKOFF, this.random);
    this.metadataOnly = options.metadataOnly === true || isMetadataOnly(options.scope.resource);
    this.streamingLists = options.streamingLists ?? true;
  }

  /** Starts the loop; `resumeFrom` (a resume point the server holds) skips the initial list while it is valid. */
  start(resumeFrom?: string): void {
    if (this.running) return;
    this.loopState = initialLoopState(resumeFrom, this.streamingLists);
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.state = 'stopped';
    await this.running;
  }

  private get signal(): AbortSignal {
    return this.abort.signal;
  }

  private get loopState(): ReflectorLoopState {
    const { resourceVersion, synced, streamingLists, forbidden, forbiddenStreak, lastGoneAt } = this;
    return { resourceVersion, synced, streamingLists, forbidden, forbiddenStreak, lastGoneAt };
  }

  private set loopState(s: ReflectorLoopState) {
    ({
      resourceVersion: this.resourceVersion,
      synced: this.synced,
      streamingLists: this.streamingLists,
      forbidden: this.forbidden,
      forbiddenStreak: this.forbiddenStreak,
      lastGoneAt: this.lastGoneAt,
    } = s);
  }

  /** Runs requests and follows nextReflectorStep's decisions until stopped. */
  private async loop(): Promise<void> {
    while (!this.signal.aborted) {
      const started = this.clock.now();
      let event: ReflectorEvent;
      let error: Error | undefined;
      try {
        const request = nextRequest(this.loopState);
        if (request === 'list') {
          await this.list();
          event = { type: 'listed' };
        } else {
          const received = await this.watch(request === 'streaming-list');
          event = { type: 'watch-ended', received, elapsedMs: this.clock.now() - started };
        }
      } catch (e) {
        if (this.signal.aborted) break;
        error = e as Error;
        event = { type: 'failed', failure: classifyFailure(e), at: this.clock.now() };
      }
      const rv = this.resourceVersion;
      const step = nextReflectorStep(this.loopState, event);
      this.loopState = step.state;
      this.report(step, event.type === 'failed' ? event.failure : undefined, error, rv);
      if (step.wait === 'none' || this.signal.aborted) continue;
      if (step.wait === 'forbidden-retry') {
        this.state = 'forbidden';
        await sleep(this.options.forbiddenRetryMs ?? 600_000, this.signal, this.clock);
      } else {
        this.state = 'backoff';
        await sleep(this.backoff.next(), this.signal, this.clock);
      }
    }
    this.state = 'stopped';
  }

  /** The bookkeeping, logs and hooks of one step (`rv`: where the failed request stood). */
  private report(step: ReflectorStep, failure: Failure | undefined, error: Error | undefined, rv?: string): void {
    const log = this.options.logger;
    const hooks = this.options.hooks;
    const scope = scopeId(this.scope);
    if (step.failed) this.failures += 1;
    if (step.resetBackoff) this.backoff.reset();
    if (step.report === 'allowed') {
      this.lastError = undefined;
      log.info({ scope }, 'kind is readable again');
      hooks?.onAllowed?.(this.scope);
    }
    if (step.error) this.lastError = step.error;
    // An error retried at once (a first 410, streaming lists refused) is not one the scope is stuck on.
    if (error && step.wait !== 'none') this.lastError = error.message;
    if (failure === 'gone') log.info({ scope, rv }, 'resourceVersion expired (410), relisting');
    if (failure === 'watch-list-refused' && step.wait === 'none') {
      log.info({ scope, error: error?.message }, 'streaming lists refused, using LIST');
    }
    if (step.report === 'forbidden') {
      log[this.options.quietForbidden ? 'debug' : 'warn'](
        { scope, error: this.lastError },
        'forbidden to list/watch this kind; skipping it (retried on a slow timer)',
      );
      hooks?.onForbidden?.(this.scope, error as KubeApiError);
    }
    if (failure && step.wait === 'backoff') log.warn({ scope, error: this.lastError }, 'watch failed, backing off');
    if (step.report === 'not-found') hooks?.onNotFound?.(this.scope);
    if (step.restart) hooks?.onWatchRestart?.(this.scope, step.restart);
  }

  private query(params: Record<string, string | undefined>): string {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, v);
    if (this.options.fieldSelector) q.set('fieldSelector', this.options.fieldSelector);
    return `${collectionPath(this.scope.resource, this.scope.namespace)}?${q.toString()}`;
  }

  /** Paginated LIST, sent between SyncStart and SyncEnd. An expired continue token (410) restarts it. */
  private async list(): Promise<void> {
    this.state = 'pending';
    const release = await this.options.syncBudget?.acquire(this.signal);
    try {
      if (!this.signal.aborted) await this.listPages();
    } finally {
      release?.();
    }
  }

  private async listPages(): Promise<void> {
    const { sink } = this.options;
    this.state = 'listing';
    this.relists += 1;
    const started = this.clock.now();
    let count = 0;
    let cont: string | undefined;
    let rv = '';
    sink.syncStart(this.scope);
    do {
      await this.room();
      const page = await this.options.client.getJson<ListPage>(
        this.query({ limit: String(this.options.pageSize ?? 500), continue: cont }),
        { accept: this.metadataOnly ? PARTIAL_OBJECT_METADATA_LIST : 'application/json', signal: this.signal },
      );
      for (const item of page.items ?? []) {
        const change = this.toChange('ADDED', item);
        if (change) sink.change(this.scope, change);
        count += 1;
      }
      cont = page.metadata?.continue || undefined;
      rv = page.metadata?.resourceVersion ?? rv;
      // remainingItemCount comes with a continue token (not with a field selector); the last page ends the count.
      const remaining = page.metadata?.remainingItemCount;
      const total = remaining !== undefined ? count + remaining : cont ? undefined : count;
      if (cont) this.options.hooks?.onListProgress?.(this.scope, count, total);
    } while (cont && !this.signal.aborted);
    if (this.signal.aborted) return;
    sink.syncEnd(this.scope, rv);
    this.resourceVersion = rv;
    this.synced = true;
    this.lastSyncMs = this.clock.now() - started;
    this.options.hooks?.onSynced?.(this.scope, this.lastSyncMs, count);
  }

  /**
   * One WATCH request, read until the server ends it. With `initial` it is a streaming list: every object comes
   * as ADDED, then a bookmark annotated k8s.io/initial-events-end marks the list's end, and the same stream goes
   * on as a normal watch. Returns the number of events received.
   */
  private async watch(initial: boolean): Promise<number> {
    const { sink, client } = this.options;
    const [lo, hi] = this.options.watchTimeoutSeconds ?? [300, 600];
    const timeout = String(watchTimeoutSeconds([lo, hi], this.random));
    const path = initial
      ? this.query({
          watch: '1',
          allowWatchBookmarks: 'true',
          sendInitialEvents: 'true',
          resourceVersionMatch: 'NotOlderThan',
          resourceVersion: '',
          timeoutSeconds: timeout,
        })
      : this.query({
          watch: '1',
          allowWatchBookmarks: 'true',
          resourceVersion: this.resourceVersion,
          timeoutSeconds: timeout,
        });
    let release: (() => void) | undefined;
    if (initial) {
      this.state = 'pending';
      release = await this.options.syncBudget?.acquire(this.signal);
      if (this.signal.aborted) {
        release?.();
        return 0;
      }
    }
    this.state = initial ? 'listing' : 'watching';
    const started = this.clock.now();
    let stream: Awaited<ReturnType<KubeClient['get']>>['stream'];
    try {
      ({ stream } = await client.get(path, {
        accept: this.metadataOnly ? PARTIAL_OBJECT_METADATA : 'application/json',
        signal: this.signal,
      }));
    } catch (e) {
      release?.();
      throw e;
    }
    if (initial) {
      this.relists += 1;
      sink.syncStart(this.scope);
    }
    let inInitial = initial;
    let received = 0;
    let listed = 0;
    const splitter = new JsonLineSplitter();
    // Armed only while a streaming list is being read (not while waiting for queue room, which is our own doing).
    const stall = new StallGuard(this.clock, this.options.initialListStallMs ?? 20_000, () => stream.close());
    const armStall = (): void => (inInitial ? stall.arm() : stall.disarm());
    armStall();
    try {
      for await (const chunk of streamChunks(stream)) {
        armStall();
        for (const line of splitter.push(chunk)) {
          const event = JSON.parse(line.toString('utf8')) as WatchEvent;
          received += 1;
          this.events += 1;
          const rv = event.object?.metadata?.resourceVersion;
          switch (event.type) {
            case 'ADDED':
            case 'MODIFIED':
            case 'DELETED': {
              const change = this.toChange(event.type, event.object);
              if (change) sink.change(this.scope, change);
              if (inInitial) listed += 1;
              // During a streaming list objects arrive in no resourceVersion order; only the closing bookmark
              // says where the watch stands.
              else if (rv) this.resourceVersion = rv;
              break;
            }
            case 'BOOKMARK':
              if (!rv) break;
              if (inInitial) {
                if (event.object.metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true') break;
                inInitial = false;
                // The list is complete: a quiet watch from here on is no stall (the guard would close it).
                stall.disarm();
                this.resourceVersion = rv;
                this.synced = true;
                sink.syncEnd(this.scope, rv);
                this.lastSyncMs = this.clock.now() - started;
                this.options.hooks?.onSynced?.(this.scope, this.lastSyncMs, listed);
                this.state = 'watching';
                release?.();
                release = undefined;
              } else {
                this.resourceVersion = rv;
                sink.bookmark(this.scope, rv);
              }
              break;
            case 'ERROR':
              throw watchStatusError(event.object as { code?: number; reason?: string; message?: string });
            default:
              break;
          }
        }
        if (inInitial && listed > 0) this.options.hooks?.onListProgress?.(this.scope, listed, undefined);
        // Backpressure: stop pulling from the stream (HTTP/2 flow control then stops the API server).
        if (!sink.hasRoom()) {
          stall.disarm();
          await this.room();
          armStall();
        }
        if (this.signal.aborted) break;
      }
    } catch (e) {
      if (!stall.fired) throw e;
    } finally {
      stall.disarm();
      release?.();
      if (!stream.closed) stream.close();
    }
    if (stall.fired && inInitial && !this.signal.aborted) {
      this.options.logger.warn(
        { scope: scopeId(this.scope), afterMs: this.clock.now() - started },
        'streaming list stalled before its initial-events-end bookmark; using paginated LIST for this scope',
      );
      throw new InitialListIncomplete(true);
    }
    // The stream ended before the list did; the next attempt lists again.
    if (inInitial && !this.signal.aborted) throw new InitialListIncomplete(false);
    return received;
  }

  private async room(): Promise<void> {
    if (this.options.sink.hasRoom()) return;
    await this.options.sink.waitForRoom(this.signal);
  }

  /** The change as sent: managedFields dropped, Secrets reduced to metadata, nothing else kept. */
  private toChange(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: KubeObject): Change | undefined {
    const meta = obj.metadata;
    if (!meta?.name) return undefined;
    const r = this.scope.resource;
    const apiVersion = apiVersionOfResource(r);
    delete meta.managedFields;
    let out: KubeObject;
    if (this.metadataOnly) {
      // Rebuilt from metadata alone, whatever the server sent: data cannot slip through even if a server
      // ignored the PartialObjectMetadata Accept header.
      const annotations = meta.annotations ? { ...meta.annotations } : undefined;
      if (annotations) delete annotations[LAST_APPLIED];
      out = { apiVersion, kind: r.kind, metadata: { ...meta, ...(annotations ? { annotations } : {}) } };
    } else {
      obj.apiVersion ??= apiVersion;
      obj.kind ??= r.kind;
      out = obj;
    }
    return {
      type:
        type === 'ADDED'
          ? ChangeType.CHANGE_TYPE_ADDED
          : type === 'MODIFIED'
            ? ChangeType.CHANGE_TYPE_MODIFIED
            : ChangeType.CHANGE_TYPE_DELETED,
      account: this.scope.account,
      apiVersion,
      kind: r.kind,
      namespace: meta.namespace ?? '',
      name: meta.name,
      uid: meta.uid ?? '',
      resourceVersion: meta.resourceVersion ?? '',
      objectJson: Buffer.from(JSON.stringify(out)),
    };
  }
}
