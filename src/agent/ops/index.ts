export { executeOperation, executeWireOperation, type ExecuteOptions, type ExecutionResult } from './execute.js';
export { KubeApiError } from '../../shared/errors.js';
