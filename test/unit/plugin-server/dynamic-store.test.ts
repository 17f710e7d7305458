import { MemoryDynamicAccountStore } from '../../../src/plugin-server/accounts/dynamic-store.js';
import { dynamicStoreContract } from './dynamic-store-contract.js';

dynamicStoreContract('memory', {
  create: async () => new MemoryDynamicAccountStore(),
  destroy: async (s) => s.close(),
});
