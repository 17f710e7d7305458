import { MysqlCacheStore } from '../../../src/plugin-server/cache/mysql.js';
import type { CacheStore } from '../../../src/plugin-server/cache/store.js';
import { createTestDatabase } from '../../infra/index.js';
import { cacheStoreContract } from '../../unit/plugin-server/store-contract.js';

// The same contract as the memory store, against the real MariaDB of the test run (one database per test).
const drops = new WeakMap<CacheStore, () => Promise<void>>();

cacheStoreContract('mysql', {
  create: async () => {
    const db = await createTestDatabase('sa_store');
    const store = new MysqlCacheStore(db.url);
    drops.set(store, db.drop);
    return store;
  },
  destroy: async (store) => {
    await store.close();
    await drops.get(store)?.();
  },
});
