import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { realClock, type Clock, type ClockTimer } from '../shared/clock.js';

type GcFunction = (options: { type: 'major'; execution: 'sync'; flavor: 'last-resort' }) => void;

/**
 * Gives back the memory an initial sync leaves behind. While lists stream, V8's heap grows to hold the objects in
 * flight (parsed events, the send queue), and Node never runs V8's memory reducer on its own: measured with
 * bench/agent-memory.ts, 100 accounts × 10k objects left ~160 MB of committed heap with ~25 MB in use, and the
 * Buffers still unreachable in it kept their malloc'd backing stores. One last-resort (compacting, memory-reducing)
 * collection once every initial list is done returns both; it costs one pause per sync, not per event (130-150 ms
 * with 25 MB live on a loaded 2-core machine; a regular major collection, half of that, frees the objects but
 * keeps the pages committed). Lists that end again within `minIntervalMs` (a relist storm) share one collection.
 * Syncs that grew the heap little (a small namespace, a relist of one kind) are not collected: the pause stops
 * everything the agent does, and measured with bench/operations.ts it was 0.4-0.9 s on a loaded 2-core machine for an
 * agent whose initial sync listed two objects, stalling the first operations it ran a second later.
 */
export class HeapRelease {
  private timer: ClockTimer | undefined;
  private lastAt = -Infinity;
  private readonly delayMs: number;
  private readonly minIntervalMs: number;
  private readonly clock: Clock;
  private readonly collect: () => void;
  private readonly footprint: () => number;
  private readonly minGrowthBytes: number;
  /** The footprint when the first list since the last decision started. */
  private before: number | undefined;

  constructor(
    options: {
      delayMs?: number;
      minIntervalMs?: number;
      clock?: Clock;
      collect?: () => void;
      /** The memory a collection could give back, measured before and after the syncs (default heapFootprint()). */
      footprint?: () => number;
      /** Syncs that grew the footprint by less are not collected. Default 32 MiB. */
      minGrowthBytes?: number;
    } = {},
  ) {
    this.delayMs = options.delayMs ?? 1000;
    this.minIntervalMs = options.minIntervalMs ?? 60_000;
    this.clock = options.clock ?? realClock;
    this.collect = options.collect ?? collectGarbage;
    this.footprint = options.footprint ?? heapFootprint;
    this.minGrowthBytes = options.minGrowthBytes ?? 32 * 1024 * 1024;
  }

  /** Every initial list is done: collect after `delayMs` (the last batches are still being sent and acked). */
  syncsDone(): void {
    this.before ??= this.footprint();
    if (this.timer) return;
    const wait = Math.max(this.delayMs, this.lastAt + this.minIntervalMs - this.clock.now());
    // A Clock's timers never keep the process alive on shutdown.
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      const grown = this.footprint() - (this.before ?? 0);
      this.before = undefined;
      if (grown < this.minGrowthBytes) return;
      this.lastAt = this.clock.now();
      this.collect();
    }, wait);
  }

  /** A list starts (again before the collection ran: wait for it to end too). */
  syncStarted(): void {
    this.before ??= this.footprint();
    this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  stop(): void {
    this.syncStarted();
  }
}

/** Committed heap and ArrayBuffer backing stores (Buffers): what a sync grows and a compacting collection gives back. */
export function heapFootprint(): number {
  const m = process.memoryUsage();
  return m.heapTotal + m.arrayBuffers;
}

let gc: GcFunction | undefined;

/** A full, compacting, memory-reducing collection (what V8 runs before giving up on an allocation). */
export function collectGarbage(): void {
  // V8's gc() with options; exposing it at run time keeps --expose-gc out of every deployment's command line.
  if (!gc) {
    setFlagsFromString('--expose-gc');
    gc = runInNewContext('gc') as GcFunction;
  }
  gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
}
