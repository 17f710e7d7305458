/**
 * The DynamicAccountStore contract: the memory store in dynamic-store.test.ts, the MySQL and PostgreSQL stores
 * against real servers in test/integration/plugin-server/{mysql,postgres}-dynamic-store.test.ts — exactly these
 * tests for each. What replicas rely on (accounts/dynamic.ts): conditional writes on the generation read, one winner
 * among concurrent writers, a version that moves with every write, and sealed kubeconfigs kept byte for byte.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DynamicAccountStore, DynamicDefinition } from '../../../src/plugin-server/accounts/dynamic-store.js';

export interface DynamicStoreFactory {
  create(): Promise<DynamicAccountStore>;
  destroy(store: DynamicAccountStore): Promise<void>;
}

export function dynamicDefinition(name: string, over: Partial<DynamicDefinition> = {}): DynamicDefinition {
  return {
    name,
    zoneId: 'zone-a',
    source: 'kubeconfigContents',
    namespaces: ['team-a'],
    omitNamespaces: [],
    kinds: [],
    omitKinds: ['Secret'],
    onlyNamespacedResources: false,
    enabled: true,
    errorMessage: '',
    failedCount: 0,
    createdAt: 1_700_000_000_000,
    updatedAt: 1_700_000_000_000,
    ...over,
  };
}

export function dynamicStoreContract(name: string, factory: DynamicStoreFactory): void {
  describe(`DynamicAccountStore contract (${name})`, () => {
    let store: DynamicAccountStore;
    beforeEach(async () => {
      store = await factory.create();
      await store.init();
    });
    afterEach(async () => {
      await factory.destroy(store);
    });

    it('creates a name once, and keeps the definition and the sealed bytes as given', async () => {
      const sealed = Buffer.from([0, 1, 2, 250, 255, 0x27, 0x5c]);
      const def = dynamicDefinition('dyn-a', {
        permissions: { READ: ['team-a'], WRITE: ['team-a-admins'] },
        placement: { agentId: 'agent-1', replica: 'r1' },
      });
      const g = await store.save({ definition: def, sealedKubeconfig: sealed }, 'new');
      expect(g).toBeGreaterThan(0);
      expect(await store.save({ definition: dynamicDefinition('dyn-a', { zoneId: 'other' }) }, 'new')).toBeUndefined();
      const rows = await store.list();
      expect(rows).toHaveLength(1);
      expect(rows[0]?.definition).toEqual(def);
      expect(rows[0]?.sealedKubeconfig?.equals(sealed)).toBe(true);
      expect(rows[0]?.generation).toBe(g);
    });

    it('writes and deletes only at the generation the writer read, and moves the version with each write', async () => {
      const v0 = await store.version();
      const g1 = await store.save({ definition: dynamicDefinition('dyn-b') }, 'new');
      const v1 = await store.version();
      expect(v1).not.toBe(v0);
      const g2 = await store.save({ definition: dynamicDefinition('dyn-b', { enabled: false }) }, g1 as number);
      expect(g2).toBeDefined();
      expect(g2).not.toBe(g1);
      // A writer that read g1 lost: nothing written.
      expect(await store.save({ definition: dynamicDefinition('dyn-b', { zoneId: 'stale' }) }, g1 as number)).toBe(
        undefined,
      );
      expect((await store.list())[0]?.definition.enabled).toBe(false);
      expect(await store.version()).not.toBe(v1);
      expect(await store.delete('dyn-b', g1 as number)).toBe(false);
      const v2 = await store.version();
      expect(await store.delete('dyn-b', g2 as number)).toBe(true);
      expect(await store.list()).toEqual([]);
      expect(await store.version()).not.toBe(v2);
      expect(await store.delete('dyn-b', g2 as number)).toBe(false);
    });

    it('of writers racing on one account, exactly one wins', async () => {
      const creates = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          store.save({ definition: dynamicDefinition('dyn-c', { zoneId: `z${i}` }) }, 'new'),
        ),
      );
      const won = creates.filter((g) => g !== undefined);
      expect(won).toHaveLength(1);
      const updates = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          store.save({ definition: dynamicDefinition('dyn-c', { zoneId: `u${i}` }) }, won[0] as number),
        ),
      );
      expect(updates.filter((g) => g !== undefined)).toHaveLength(1);
      const [row] = await store.list();
      expect(row?.generation).toBe(updates.find((g) => g !== undefined));
    });

    it('lists every account in name order', async () => {
      for (const n of ['dyn-z', 'dyn-a', 'dyn-m']) await store.save({ definition: dynamicDefinition(n) }, 'new');
      expect((await store.list()).map((r) => r.definition.name)).toEqual(['dyn-a', 'dyn-m', 'dyn-z']);
    });
  });
}
