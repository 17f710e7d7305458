import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { cacheStoreContract } from './store-contract.js';

cacheStoreContract('memory', {
  create: async () => new MemoryCacheStore(),
  destroy: async (store) => store.close(),
});
