export * from './types.js';
export * from './issues.js';
export * from './kinds.js';
export * from './parse.js';
export * from './validate.js';
export * from './spinnaker.js';
export * from './results.js';
