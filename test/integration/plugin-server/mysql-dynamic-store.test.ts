import { MysqlDynamicAccountStore } from '../../../src/plugin-server/accounts/dynamic-store.js';
import { onTestDatabases } from '../../infra/index.js';
import { dynamicStoreContract } from '../../unit/plugin-server/dynamic-store-contract.js';

// The same contract as the memory store, against the real MariaDB of the test run (one database per test).
dynamicStoreContract(
  'mysql',
  onTestDatabases('sa_dyn', (url) => new MysqlDynamicAccountStore(url)),
);
