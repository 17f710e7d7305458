export * from './types.js';
export * from './kinds.js';
export * from './label-selector.js';
export * from './wire.js';
export * from './spinnaker.js';
export * from './results.js';
export * from './artifacts.js';
export * from './job-status.js';
