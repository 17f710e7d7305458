import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** The agent's Prometheus metrics, on their own registry (the process may host other registries in tests). */
export interface MetricSources {
  watchStates(): Map<string, number>;
  queue(): { pendingItems: number; pendingBytes: number; unackedBytes: number };
}

export class AgentMetrics {
  readonly registry = new Registry();
  /** Read at scrape time (gauges of things the agent already counts). */
  sources: MetricSources | undefined;

  readonly eventsSent = new Counter({
    name: 'scale_agent_agent_events_sent_total',
    help: 'Changes (ADDED/MODIFIED/DELETED) written to the stream.',
    labelNames: ['account'] as const,
    registers: [this.registry],
  });

  readonly bytesSent = new Counter({
    name: 'scale_agent_agent_sent_bytes_total',
    help: 'Bytes of objects (and per-change overhead) written to the stream.',
    registers: [this.registry],
  });

  readonly reconnects = new Counter({
    name: 'scale_agent_agent_reconnects_total',
    help: 'Streams to the plugin-server that ended and were dialled again.',
    registers: [this.registry],
  });

  readonly connected = new Gauge({
    name: 'scale_agent_agent_connected',
    help: '1 while the stream is up and welcomed, else 0.',
    registers: [this.registry],
  });

  readonly watches = new Gauge({
    name: 'scale_agent_agent_watches',
    help: 'Watches (reflectors) by state.',
    labelNames: ['state'] as const,
    registers: [this.registry],
    collect: () => {
      this.watches.reset();
      for (const [state, n] of this.sources?.watchStates() ?? []) this.watches.set({ state }, n);
    },
  });

  readonly queueItems = new Gauge({
    name: 'scale_agent_agent_queue_depth_items',
    help: 'Messages waiting in the send queue.',
    registers: [this.registry],
    collect: () => {
      this.queueItems.set(this.sources?.queue().pendingItems ?? 0);
    },
  });

  readonly queueBytes = new Gauge({
    name: 'scale_agent_agent_queue_bytes',
    help: 'Bytes waiting in the send queue plus bytes sent but not yet acknowledged.',
    registers: [this.registry],
    collect: () => {
      const q = this.sources?.queue();
      this.queueBytes.set(q ? q.pendingBytes + q.unackedBytes : 0);
    },
  });

  readonly backpressure = new Counter({
    name: 'scale_agent_agent_backpressure_pauses_total',
    help: 'Times a watch stopped reading because the send queue was full.',
    registers: [this.registry],
  });

  readonly syncDuration = new Histogram({
    name: 'scale_agent_agent_sync_duration_seconds',
    help: 'Time of a full list (LIST or streaming list) of one watch scope.',
    buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300],
    registers: [this.registry],
  });

  readonly operationCancels = new Counter({
    name: 'scale_agent_agent_operation_cancels_total',
    help: 'Cancels received, by what they did: stop (no write had gone out), run-to-end (one had), ignore (not running).',
    labelNames: ['decision'] as const,
    registers: [this.registry],
  });

  readonly watchRestarts = new Counter({
    name: 'scale_agent_agent_watch_restarts_total',
    help: 'Watch requests that ended and were started again, by reason (timeout, gone = 410 relist, stall = streaming list abandoned, error).',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly forbiddenKinds = new Gauge({
    name: 'scale_agent_agent_forbidden_kinds',
    help: 'Kinds skipped because the account may not list/watch them (RBAC 403).',
    labelNames: ['account'] as const,
    registers: [this.registry],
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: 'scale_agent_agent_' });
  }
}
