export { PluginServer } from './server.js';
export { createStore } from './storage.js';
export { loadPluginServerConfig, parsePluginServerConfig, type PluginServerConfig } from './config.js';
export { resolvePluginServerSecrets } from './secrets.js';
export { AccountRegistry, type AccountState, type RegisteredAccount } from './accounts.js';
export type {
  StoreBackend,
  ObjectCache,
  ObjectIndex,
  AccountStateStore,
  CachedObject,
  StoreOp,
  StoreChange,
  ScopeKey,
  ObjectKey,
} from './cache/store.js';
export { MemoryCacheStore } from './cache/memory.js';
export { MysqlCacheStore } from './cache/mysql.js';
export { manifestStatus, type ManifestStatus, type Condition } from './api/status.js';
