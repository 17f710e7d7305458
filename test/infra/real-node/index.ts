export { RealNode, type RealNodeOptions } from './node.js';
export { diffHost, snapshotHost, type HostState } from './host-state.js';
export * as layout from './layout.js';
