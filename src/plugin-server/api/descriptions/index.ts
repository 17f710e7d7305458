export * from './issues.js';
export * from './parse.js';
export * from './validate.js';
