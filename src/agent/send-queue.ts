import type { AgentMessage, Change, KindKey } from '../shared/proto.js';
import type { ReflectorSink, WatchScope } from './reflector.js';

/** Where batches go: the gRPC stream's write (false = its buffer is full, wait for onDrain). */
export interface QueueTransport {
  write(message: AgentMessage): boolean;
  onDrain(listener: () => void): void;
}

export interface SendQueueOptions {
  /** Budget of queued plus sent-but-unacknowledged bytes; producers wait above it. */
  maxBytes: number;
  maxBatchBytes: number;
  maxInFlightBatches: number;
}

export interface SendQueueStats {
  pendingItems: number;
  pendingBytes: number;
  unackedBytes: number;
  inFlight: number;
  lastSeq: number;
  ackedSeq: number;
}

export interface SendQueueListener {
  onSent?(changes: Change[], bytes: number): void;
  onPaused?(): void;
}

type Item =
  | { t: 'change'; change: Change; bytes: number; at: number }
  | { t: 'syncStart'; scope: WatchScope; bytes: number }
  | { t: 'syncEnd'; scope: WatchScope; rv: string; bytes: number }
  | { t: 'bookmark'; scope: WatchScope; rv: string; bytes: number };

interface Flight {
  lastSeq: number;
  bytes: number;
}

// Per-message overhead beyond the object bytes (names, versions, protobuf framing), for budgeting only.
const CHANGE_OVERHEAD = 96;
const CONTROL_BYTES = 128;

export function kindKeyOf(scope: WatchScope): KindKey {
  const r = scope.resource;
  return { group: r.group, version: r.version, kind: r.kind, resource: r.resource, namespaced: r.namespaced };
}

/**
 * The bounded, byte-budgeted queue between watches and the stream. A change is written at once when fewer than
 * maxInFlightBatches sends are unacknowledged; otherwise changes accumulate and leave together as one batch when an
 * Ack frees a slot — batching happens only while earlier sends are in flight, never on a timer. When queued plus
 * unacknowledged bytes pass maxBytes, hasRoom() turns false and the reflectors stop reading their watches.
 *
 * Data messages are numbered 1, 2, 3, ... per stream (Ack is cumulative). Nothing is kept for replay: after a
 * reconnect the server's resume points say where each watch continues, so un-acked data is simply dropped.
 */
export class SendQueue implements ReflectorSink {
  private items: Item[] = [];
  private head = 0;
  private pendingBytes = 0;
  private unackedBytes = 0;
  private flights: Flight[] = [];
  private seq = 0;
  private ackedSeq = 0;
  private transport: QueueTransport | undefined;
  private blocked = false;
  private window: number;
  private maxBatchBytes: number;
  private waiters: (() => void)[] = [];
  private pumping = false;

  constructor(
    private options: SendQueueOptions,
    private readonly listener: SendQueueListener = {},
  ) {
    this.window = options.maxBytes;
    this.maxBatchBytes = options.maxBatchBytes;
  }

  // ----- producer side (ReflectorSink) -----

  syncStart(scope: WatchScope): void {
    this.enqueue({ t: 'syncStart', scope, bytes: CONTROL_BYTES });
  }

  change(_scope: WatchScope, change: Change): void {
    this.enqueue({ t: 'change', change, bytes: change.objectJson.length + CHANGE_OVERHEAD, at: Date.now() });
  }

  syncEnd(scope: WatchScope, rv: string): void {
    this.enqueue({ t: 'syncEnd', scope, rv, bytes: CONTROL_BYTES });
  }

  bookmark(scope: WatchScope, rv: string): void {
    this.enqueue({ t: 'bookmark', scope, rv, bytes: CONTROL_BYTES });
  }

  hasRoom(): boolean {
    return this.pendingBytes + this.unackedBytes < this.options.maxBytes;
  }

  waitForRoom(signal: AbortSignal): Promise<void> {
    if (this.hasRoom() || signal.aborted) return Promise.resolve();
    this.listener.onPaused?.();
    return new Promise((resolve) => {
      const done = (): void => {
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.push(done);
      signal.addEventListener('abort', done, { once: true });
    });
  }

  // ----- consumer side (the stream) -----

  /**
   * Starts sending on a new stream. `window` is the server's max_unacked_bytes (capped by our own budget),
   * `maxMessageBytes` its largest accepted message.
   */
  attach(transport: QueueTransport, limits: { window?: number; maxMessageBytes?: number } = {}): void {
    this.reset();
    this.transport = transport;
    this.window = Math.min(limits.window || this.options.maxBytes, this.options.maxBytes);
    // Leave room for the envelope of a batch next to its objects.
    const serverMax = limits.maxMessageBytes ? Math.max(4096, limits.maxMessageBytes - 64 * 1024) : Infinity;
    this.maxBatchBytes = Math.min(this.options.maxBatchBytes, serverMax);
    transport.onDrain(() => {
      this.blocked = false;
      this.pump();
    });
  }

  /** The stream is gone: drop everything (the next stream resumes from the server's resume points). */
  detach(): void {
    this.transport = undefined;
    this.reset();
  }

  /** Cumulative acknowledgement from the server. */
  ack(seq: number): void {
    if (seq <= this.ackedSeq) return;
    this.ackedSeq = seq;
    while (this.flights.length > 0 && (this.flights[0] as Flight).lastSeq <= seq) {
      this.unackedBytes -= (this.flights.shift() as Flight).bytes;
    }
    if (this.unackedBytes < 0) this.unackedBytes = 0;
    this.pump();
    this.wake();
  }

  updateOptions(options: SendQueueOptions): void {
    this.options = options;
    this.maxBatchBytes = Math.min(this.maxBatchBytes, options.maxBatchBytes);
    this.wake();
  }

  stats(): SendQueueStats {
    return {
      pendingItems: this.items.length - this.head,
      pendingBytes: this.pendingBytes,
      unackedBytes: this.unackedBytes,
      inFlight: this.flights.length,
      lastSeq: this.seq,
      ackedSeq: this.ackedSeq,
    };
  }

  /** Whether everything enqueued so far has been acknowledged. */
  get idle(): boolean {
    return this.head === this.items.length && this.flights.length === 0;
  }

  private enqueue(item: Item): void {
    if (!this.transport) return;
    this.items.push(item);
    this.pendingBytes += item.bytes;
    this.pump();
  }

  private reset(): void {
    this.items = [];
    this.head = 0;
    this.pendingBytes = 0;
    this.unackedBytes = 0;
    this.flights = [];
    this.seq = 0;
    this.ackedSeq = 0;
    this.blocked = false;
    this.wake();
  }

  private wake(): void {
    if (!this.hasRoom() || this.waiters.length === 0) return;
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (
        this.transport &&
        !this.blocked &&
        this.head < this.items.length &&
        this.flights.length < this.options.maxInFlightBatches &&
        (this.unackedBytes < this.window || this.flights.length === 0)
      ) {
        this.sendFlight(this.transport);
      }
      if (this.head > 1024 && this.head * 2 > this.items.length) {
        this.items = this.items.slice(this.head);
        this.head = 0;
      }
    } finally {
      this.pumping = false;
    }
  }

  /** Sends the head of the queue, up to maxBatchBytes, as one flight (consecutive changes → one ChangeBatch). */
  private sendFlight(transport: QueueTransport): void {
    let flightBytes = 0;
    let batch: Change[] = [];
    let batchBytes = 0;
    let observedAtMs = 0;
    const flushBatch = (): void => {
      if (batch.length === 0) return;
      const changes = batch;
      batch = [];
      this.write(transport, { changeBatch: { seq: ++this.seq, changes, observedAtMs } });
      this.listener.onSent?.(changes, batchBytes);
      batchBytes = 0;
      observedAtMs = 0;
    };
    while (this.head < this.items.length && (flightBytes === 0 || flightBytes < this.maxBatchBytes)) {
      const item = this.items[this.head] as Item;
      if (flightBytes > 0 && flightBytes + item.bytes > this.maxBatchBytes) break;
      this.items[this.head] = undefined as unknown as Item;
      this.head += 1;
      this.pendingBytes -= item.bytes;
      flightBytes += item.bytes;
      if (item.t === 'change') {
        batch.push(item.change);
        batchBytes += item.bytes;
        if (observedAtMs === 0) observedAtMs = item.at;
        continue;
      }
      flushBatch();
      const base = {
        seq: ++this.seq,
        account: item.scope.account,
        kind: kindKeyOf(item.scope),
        namespace: item.scope.namespace,
      };
      if (item.t === 'syncStart') this.write(transport, { syncStart: base });
      else if (item.t === 'syncEnd') this.write(transport, { syncEnd: { ...base, resourceVersion: item.rv } });
      else this.write(transport, { bookmark: { ...base, resourceVersion: item.rv } });
    }
    flushBatch();
    this.unackedBytes += flightBytes;
    this.flights.push({ lastSeq: this.seq, bytes: flightBytes });
  }

  private write(transport: QueueTransport, message: AgentMessage): void {
    if (!transport.write(message)) this.blocked = true;
  }
}
