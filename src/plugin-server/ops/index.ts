export { CacheBarrier, isCached, type BarrierOutcome } from './barrier.js';
export { OperationDispatcher, type OperationSession, type DispatchOutcome } from './dispatcher.js';
export { TaskRunner, type TaskRunnerOptions } from './task-runner.js';
export { LiveReader } from './live-read.js';
export { OperationMetrics } from './metrics.js';
