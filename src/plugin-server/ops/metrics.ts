import { Counter, Histogram, type Registry } from 'prom-client';

/** Operation metrics, on the plugin-server's registry (kept here with the code that moves them). */
export class OperationMetrics {
  readonly operations: Counter<'type' | 'result'>;
  readonly duration: Histogram<'type'>;
  readonly barrierWait: Histogram;

  constructor(registry: Registry) {
    const registers = [registry];
    this.operations = new Counter({
      name: 'scale_agent_plugin_server_operations_total',
      help: 'Operations finished, by type and result (succeeded, failed, agent_unavailable, cache_behind, cancelled).',
      labelNames: ['type', 'result'],
      registers,
    });
    this.duration = new Histogram({
      name: 'scale_agent_plugin_server_operation_duration_seconds',
      help: 'From queueing an operation to its end, including the wait for the cache to catch up.',
      labelNames: ['type'],
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers,
    });
    this.barrierWait = new Histogram({
      name: 'scale_agent_plugin_server_operation_cache_wait_seconds',
      help: 'Time from an operation result to the cache holding everything it wrote (the consistency barrier).',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
      registers,
    });
  }
}
