/**
 * The one place a storage config becomes its backends: the cache store, the task repository, the dynamic account
 * store and, without `http.peerAuth`, the secret replicas sharing the store present to each other. Each SQL store
 * keeps all of them in the same database, so what replicas share is exactly one URL.
 */
import {
  MysqlDynamicAccountStore,
  MemoryDynamicAccountStore,
  type DynamicAccountStore,
} from './accounts/dynamic-store.js';
import { PostgresDynamicAccountStore } from './accounts/postgres-dynamic-store.js';
import { PeerSecret } from './auth/peer-secret.js';
import { MemoryCacheStore } from './cache/memory.js';
import { MysqlCacheStore } from './cache/mysql.js';
import { PostgresCacheStore } from './cache/postgres.js';
import type { StoreBackend } from './cache/store.js';
import { resolveStorageUrl, type PluginServerConfig } from './config.js';
import type { StorageFullSignal } from './storage-full.js';
import {
  MemoryTaskRepository,
  MysqlTaskRepository,
  PostgresTaskRepository,
  type TaskRepository,
} from './tasks/index.js';

type StorageConfig = PluginServerConfig['storage'];

/** Whether replicas can share this storage (and so have peers to forward to and definitions to poll). */
export function sharedStorage(storage: StorageConfig): boolean {
  return storage.type !== 'memory';
}

export function createStore(config: PluginServerConfig, storageFull?: StorageFullSignal): StoreBackend {
  const storage = config.storage;
  const options = { connectionLimit: storage.type === 'memory' ? 0 : storage.connectionLimit, storageFull };
  switch (storage.type) {
    case 'memory':
      return new MemoryCacheStore();
    case 'mysql':
      return new MysqlCacheStore(resolveStorageUrl(storage), options);
    case 'postgres':
      return new PostgresCacheStore(resolveStorageUrl(storage), options);
  }
}

export function createTaskRepository(storage: StorageConfig, storageFull: StorageFullSignal): TaskRepository {
  switch (storage.type) {
    case 'memory':
      return new MemoryTaskRepository();
    case 'mysql':
      return new MysqlTaskRepository(resolveStorageUrl(storage), { storageFull });
    case 'postgres':
      return new PostgresTaskRepository(resolveStorageUrl(storage), { storageFull });
  }
}

export function createDynamicAccountStore(storage: StorageConfig): DynamicAccountStore {
  switch (storage.type) {
    case 'memory':
      return new MemoryDynamicAccountStore();
    case 'mysql':
      return new MysqlDynamicAccountStore(resolveStorageUrl(storage));
    case 'postgres':
      return new PostgresDynamicAccountStore(resolveStorageUrl(storage));
  }
}

/** Derived from the store's URL when the config names no peer secret; none on memory storage (no peers). */
export function storagePeerSecret(storage: StorageConfig): PeerSecret | undefined {
  return storage.type === 'memory' ? undefined : PeerSecret.fromStore(resolveStorageUrl(storage));
}
