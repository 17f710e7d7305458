export { executeOperation, executeWireOperation, type ExecuteOptions, type ExecutionResult } from './execute.js';
export { KubeOpError } from './rest.js';
