/**
 * Named indexes registered by their consumers (store.ts IndexDefinition): what each backend keeps. The contract
 * both pass is in store-contract.ts; this is where they differ.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCacheStore } from '../../../src/plugin-server/cache/memory.js';
import { MysqlCacheStore } from '../../../src/plugin-server/cache/mysql.js';
import { NO_KEYS, type IndexDefinition } from '../../../src/plugin-server/cache/store.js';
import { convertBatch } from '../../../src/plugin-server/ingest/wire.js';
import { APPLICATION_INDEX } from '../../../src/plugin-server/views/app-index.js';
import { storeChange } from '../../infra/records.js';
import { DEFAULT_INDEX_OPTIONS } from '../../../src/plugin-server/cache/store.js';
import type { ChangeBatch } from '../../../src/shared/proto.js';
import { change, configMap as configMapObject } from './helpers.js';

/** A consumer's own index: ConfigMaps by their `team` label. */
const TEAM_INDEX: IndexDefinition = {
  names: ['team'],
  keys: (_group, kind, manifest) => {
    const team = (manifest.metadata as { labels?: Record<string, string> } | undefined)?.labels?.team;
    return kind === 'ConfigMap' && team ? { team } : NO_KEYS;
  },
  module: import.meta.url,
  export: 'TEAM_INDEX',
};

const configMap = (name: string, rv: string, team: string) => storeChange(name, rv, { index: { team } });

describe('named indexes by backend', () => {
  it('the memory store keeps any index a consumer registers, beside the views’ ones', async () => {
    const store = new MemoryCacheStore();
    store.addIndex(APPLICATION_INDEX);
    store.addIndex(TEAM_INDEX);
    expect(store.indexes()).toEqual([APPLICATION_INDEX, TEAM_INDEX]);
    await store.apply([configMap('a', '1', 'blue'), configMap('b', '2', 'red'), configMap('c', '3', 'blue')]);
    expect((await store.byIndex('team', ['blue'])).map((o) => `${o.name}:${o.index?.team}`)).toEqual([
      'a:blue',
      'c:blue',
    ]);
    await store.apply([configMap('a', '4', 'red')]);
    expect((await store.byIndex('team', ['red'], 'dev')).map((o) => o.name)).toEqual(['a', 'b']);
    expect(await store.byIndex('team', ['red'], 'prod')).toEqual([]);
  });

  it('the MySQL store keeps its column-backed indexes under their names and refuses any other, naming them', async () => {
    // No connection is made: registration is decided in the process.
    const store = new MysqlCacheStore('mysql://nobody@127.0.0.1:1/none');
    try {
      store.addIndex(APPLICATION_INDEX);
      expect(() => store.addIndex(TEAM_INDEX)).toThrow(
        'index team: the MySQL store keeps only the indexes application, cluster, owner (columns of sa_objects)',
      );
      expect(store.indexes()).toEqual([APPLICATION_INDEX]);
    } finally {
      await store.close();
    }
  });

  it('ingest computes the keys of every registered index, one object parsed once', () => {
    const labelled = (name: string, team: string) => {
      const o = configMapObject(name, '1');
      return { ...o, metadata: { ...o.metadata, labels: { team } } };
    };
    const managed = {
      apiVersion: 'apps/v1',
      kind: 'ReplicaSet',
      metadata: { name: 'shop-v001', namespace: 'ns', resourceVersion: '2', labels: { team: 'blue' } },
    };
    const { changes } = convertBatch(
      {
        seq: 1,
        observedAtMs: 0,
        changes: [change('dev', 'ADDED', labelled('a', 'blue')), change('dev', 'ADDED', managed)],
      } as ChangeBatch,
      {
        maxChanges: 10,
        defer: false,
        indexes: [APPLICATION_INDEX, TEAM_INDEX],
        indexOptions: () => DEFAULT_INDEX_OPTIONS,
      },
    );
    expect(changes.map((c) => c.index)).toEqual([
      { team: 'blue' },
      // Frigga's reading of the name: the cluster is the name without its -vNNN version.
      { application: 'shop', cluster: 'shop', owner: '' },
    ]);
  });
});
