/**
 * One agent stream's ordered path into the cache: each data message is checked (wire.ts; a large batch's objects on
 * a check thread, check-pool.ts), queued, written to the store in order, and acknowledged cumulatively. Consecutive
 * data messages waiting in the queue are written as one store batch — batching costs no latency, it only happens
 * while an earlier write is in flight. When the queue holds more than the flow-control window, the stream stops
 * reading (HTTP/2 backpressure reaches the agent) until the store catches up. Control steps the session queues
 * (Welcome, account updates) run in the same order, so a batch never overtakes the registration before it.
 */
import type { AgentMessage, ChangeBatch } from '../../shared/proto.js';
import type { ApplyStats, IndexOptions, ObjectCache, StoreChange, StoreOp } from '../cache/store.js';
import type { PluginServerMetrics } from '../metrics.js';
import { LeaseLost, type WriteFence } from '../ownership.js';
import type { CheckPool } from './check-pool.js';
import { changeAt, convertBatch, nextSeq, ProtocolError, scopedMessage, type ScopedMessage } from './wire.js';

export interface IngestDeps {
  store: Pick<ObjectCache, 'type' | 'apply' | 'indexes'>;
  metrics: Pick<
    PluginServerMetrics,
    'bytesReceived' | 'objectsChecked' | 'droppedChanges' | 'storeWrite' | 'changes' | 'changeLag' | 'activity'
  >;
  limits: { maxUnackedBytes: number; maxChangesPerBatch: number };
  /** The session the writes are attributed to (sync progress in AccountActivity). */
  sessionId: string;
  /** Whether the stream holds the account now: what it sends for accounts it does not hold is dropped. */
  holds(account: string): boolean;
  /**
   * The fencing token of a write to these accounts (a store shared by replicas checks it with the write, ownership.ts
   * WriteFence); absent, writes are not fenced (one replica: nothing to fence).
   */
  fence?: ((accounts: Iterable<string>) => WriteFence) | undefined;
  /** The account's indexing choices (its registered record). */
  indexOptions(account: string): IndexOptions;
  /** Threads that check large batches' objects; without one every object is checked on the event loop. */
  checkPool?: CheckPool | undefined;
  /** Flow control: stop reading the stream, and start again. */
  pause(): void;
  resume(): void;
  /** Every data message up to `seq` is in the store. */
  ack(seq: number): void;
  /** A queued step or write failed (a ProtocolError: the agent's fault; else the store's): the stream must close. */
  failed(error: unknown): void;
}

interface ChangesItem {
  kind: 'changes';
  seq: number;
  changes: StoreChange[];
  bytes: number;
  observedAtMs: number;
  /** Set while a check worker still checks the objects; the batch is not written before. */
  checking?: Promise<void> | undefined;
  /** Why the check refused the batch (the stream closes when the batch reaches the head of the queue). */
  refused?: unknown;
}

type DataItem = ScopedMessage | ChangesItem;
type Item = { kind: 'control'; step: () => Promise<void> } | DataItem;

/**
 * Batches at least this large are checked by a worker when the server has a check pool; smaller ones (a steady
 * trickle of watch events) on the event loop, where the hop to a thread would cost more latency than it saves.
 */
const POOL_MIN_CHANGES = 64;

/** Messages merged into one store write stop at this many ops (one MySQL transaction stays bounded). */
const MAX_OPS_PER_WRITE = 20_000;

export class IngestPipeline {
  private readonly queue: Item[] = [];
  private lastSeq = 0;
  private draining = false;
  private paused = false;
  private stopped = false;
  /** Bytes of changes received and not yet acknowledged. */
  pendingBytes = 0;
  ackedSeq = 0;

  constructor(private readonly deps: IngestDeps) {}

  /** Runs `step` after everything queued before it (Welcome after Hello, an accounts update's result). */
  control(step: () => Promise<void>): void {
    this.enqueue({ kind: 'control', step });
  }

  /** A ChangeBatch: checked now (throws ProtocolError) or on a thread, then queued. */
  changes(b: ChangeBatch): void {
    const seq = (this.lastSeq = nextSeq(this.lastSeq, b.seq));
    const pool = b.changes.length >= POOL_MIN_CHANGES ? this.deps.checkPool : undefined;
    const { changes, bytes, deferred } = convertBatch(b, {
      maxChanges: this.deps.limits.maxChangesPerBatch,
      defer: pool !== undefined,
      indexes: this.deps.store.indexes(),
      indexOptions: (account) => this.deps.indexOptions(account),
    });
    const metrics = this.deps.metrics;
    metrics.bytesReceived.inc(bytes);
    metrics.objectsChecked.inc({ on: deferred ? 'thread' : 'event_loop' }, changes.length);
    const item: ChangesItem = { kind: 'changes', seq, changes, bytes, observedAtMs: b.observedAtMs };
    if (pool && deferred) {
      item.checking = pool.check(deferred.build()).then(
        (r) => {
          item.checking = undefined;
          if (r.failed) {
            const c = b.changes[r.failed.index]!;
            item.refused = new ProtocolError(`${changeAt(c, r.failed.index)}: ${r.failed.error}`);
            return;
          }
          for (let i = 0; i < changes.length; i++) {
            const got = r.results[i];
            if (!got || 'error' in got) continue;
            if (got.json !== undefined) {
              // A Secret without its data: no longer a slice of the batch's text.
              changes[i]!.json = got.json;
              changes[i]!.text = undefined;
            }
            changes[i]!.index = got.index;
          }
        },
        (e: unknown) => {
          item.checking = undefined;
          item.refused = e;
        },
      );
    }
    this.enqueue(item);
  }

  /** A SyncStart, SyncEnd or Bookmark: checked now (throws ProtocolError), then queued. */
  scoped(m: AgentMessage): void {
    const message = scopedMessage(m);
    this.lastSeq = nextSeq(this.lastSeq, message.seq);
    this.enqueue(message);
  }

  /** The stream is gone: nothing queued is written any more. */
  stop(): void {
    this.stopped = true;
    this.queue.length = 0;
  }

  private enqueue(item: Item): void {
    this.queue.push(item);
    if (item.kind === 'changes') {
      this.pendingBytes += item.bytes;
      if (!this.paused && this.pendingBytes > this.deps.limits.maxUnackedBytes) {
        // Stop reading: HTTP/2 flow control pushes back to the agent, whose own window is then full too.
        this.paused = true;
        this.deps.pause();
      }
    }
    void this.drain();
  }

  private async drain(): Promise<void> {
    if (this.draining) return;
    this.draining = true;
    try {
      while (this.queue.length > 0 && !this.stopped) {
        const head = this.queue[0]!;
        if (head.kind === 'control') {
          this.queue.shift();
          await head.step();
        } else {
          if (head.kind === 'changes' && head.checking) await head.checking;
          if (head.kind === 'changes' && head.refused !== undefined) throw head.refused;
          await this.write();
        }
      }
    } catch (e) {
      this.deps.failed(e);
    } finally {
      this.draining = false;
    }
  }

  /** Writes every consecutive data message at the head of the queue as one store write, then acks. */
  private async write(): Promise<void> {
    const items: DataItem[] = [];
    let opCount = 0;
    while (this.queue.length > 0 && opCount < MAX_OPS_PER_WRITE) {
      const w = this.queue[0]!;
      if (w.kind === 'control') break;
      // A batch still being checked (or refused) waits for its turn at the head of the queue.
      if (items.length > 0 && w.kind === 'changes' && (w.checking || w.refused !== undefined)) break;
      this.queue.shift();
      items.push(w);
      opCount += w.kind === 'changes' ? w.changes.length : 1;
    }
    const { holds, store, metrics } = this.deps;
    const ops: StoreOp[] = [];
    let dropped = 0;
    // The accounts written, for the fence (collected per run of one account, only when writes are fenced).
    const fenced = this.deps.fence ? new Set<string>() : undefined;
    // Per changes message, its applied changes as runs of one account (a batch is mostly one account): for
    // AccountActivity, without a map lookup per change on the ingest path.
    const runs = new Map<ChangesItem, { account: string; n: number }[]>();
    for (const w of items) {
      if (w.kind === 'changes') {
        const accountRuns: { account: string; n: number }[] = [];
        runs.set(w, accountRuns);
        let run: { account: string; n: number } | undefined;
        for (const change of w.changes) {
          if (holds(change.account)) {
            ops.push({ op: 'change', change });
            if (run?.account === change.account) run.n += 1;
            else {
              accountRuns.push((run = { account: change.account, n: 1 }));
              fenced?.add(change.account);
            }
          } else dropped += 1;
        }
      } else if (holds(w.scope.account)) {
        fenced?.add(w.scope.account);
        if (w.kind === 'syncStart') ops.push({ op: 'syncStart', scope: w.scope, version: w.version });
        else ops.push({ op: w.kind, scope: w.scope, version: w.version, resourceVersion: w.resourceVersion });
      } else {
        dropped += 1;
      }
    }
    if (dropped > 0) metrics.droppedChanges.inc({ reason: 'account_not_held' }, dropped);
    const end = metrics.storeWrite.startTimer({ store: store.type });
    let stats: ApplyStats;
    try {
      stats = await store.apply(ops, fenced && this.deps.fence?.(fenced));
    } catch (e) {
      // Written under a lease the stream lost (its replica paused past it, a peer's agent took over): nothing landed.
      if (e instanceof LeaseLost) {
        metrics.droppedChanges.inc({ reason: 'lease_lost' }, ops.filter((o) => o.op === 'change').length);
      }
      throw e;
    } finally {
      end();
    }
    const now = Date.now();
    metrics.changes.inc({ result: 'applied' }, stats.applied);
    if (stats.skipped) metrics.changes.inc({ result: 'skipped' }, stats.skipped);
    let bytes = 0;
    const activity = metrics.activity;
    // In message order, so changes between a scope's SyncStart and SyncEnd count as that sync's objects.
    for (const w of items) {
      if (w.kind === 'changes') {
        bytes += w.bytes;
        if (w.observedAtMs > 0) metrics.changeLag.observe(Math.max(0, now - w.observedAtMs) / 1000);
        for (const r of runs.get(w)!) activity.applied(r.account, r.n, w.observedAtMs, now);
      } else if (w.kind === 'syncStart' || w.kind === 'syncEnd') {
        if (!holds(w.scope.account)) continue;
        const s = w.scope;
        const scope = `${s.group}/${s.kind}/${s.namespace}`;
        if (w.kind === 'syncStart') activity.syncStart(this.deps.sessionId, s.account, scope, now);
        else activity.syncEnd(this.deps.sessionId, s.account, scope);
      }
    }
    this.pendingBytes -= bytes;
    this.ackedSeq = items[items.length - 1]!.seq;
    this.deps.ack(this.ackedSeq);
    if (this.paused && this.pendingBytes <= this.deps.limits.maxUnackedBytes / 2) {
      this.paused = false;
      this.deps.resume();
    }
  }
}
