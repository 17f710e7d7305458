/**
 * The project's own records as tests build them again and again, each with plain defaults and the fields a test
 * cares about given: an account on the wire (Hello), an agent's account config, a stored account record and a store
 * change.
 */
import type { AccountConfig } from '../../src/agent/config.js';
import type { AccountRecord, StoreChange } from '../../src/plugin-server/cache/store.js';
import type { LeaseClaim } from '../../src/plugin-server/ownership.js';
import type { NormalizedOperation, PatchStrategy } from '../../src/shared/ops/types.js';
import type { Account, ClusterIdentity } from '../../src/shared/proto.js';

/** An account as an agent announces it in Hello: no filters, no permissions, both Clouddriver options off. */
export function wireAccount(name: string, cluster: Partial<ClusterIdentity> = {}): Account {
  return {
    name,
    cluster: {
      apiServerHost: '10.0.0.1:6443',
      caFingerprint: 'aa'.repeat(32),
      kubernetesVersion: 'v1.33.1',
      ...cluster,
    },
    namespaces: [],
    omitNamespaces: [],
    kinds: [],
    omitKinds: [],
    permissions: undefined,
    onlySpinnakerManaged: false,
    cacheAllApplicationRelationships: false,
  };
}

/** An agent's account as its config loader leaves it, with every default filled in. */
export function agentAccount(over: Partial<AccountConfig> & Pick<AccountConfig, 'name'>): AccountConfig {
  return {
    serviceAccount: false,
    namespaces: [],
    omitNamespaces: [],
    kinds: [],
    omitKinds: [],
    onlyNamespacedResources: false,
    onlySpinnakerManaged: false,
    cacheAllApplicationRelationships: false,
    ...over,
  };
}

/** An account record as a plugin-server stores it: unrestricted, both Clouddriver options off. */
export function accountRecord(over: Partial<AccountRecord> & Pick<AccountRecord, 'name'>): AccountRecord {
  return {
    agentId: 'agent-1',
    apiServerHost: '10.0.0.1:6443',
    caFingerprint: 'ab'.repeat(32),
    kubernetesVersion: 'v1.33.1',
    namespaces: [],
    omitNamespaces: [],
    kinds: [],
    omitKinds: [],
    permissions: { READ: [], WRITE: [] },
    onlySpinnakerManaged: false,
    cacheAllApplicationRelationships: false,
    registeredAt: 0,
    ...over,
  };
}

/**
 * A stream's claim of `account` on a replica (a one-minute lease) and the record its registration stores, for
 * `claimAccount(...leaseClaim(...))`: the agent's cluster is `host` (default `<account>:6443`).
 */
export function leaseClaim(o: {
  account: string;
  replica: string;
  sessionId: string;
  agentId: string;
  host?: string;
  leaseMs?: number;
  shareLoad?: boolean;
}): [LeaseClaim, AccountRecord] {
  const host = o.host ?? `${o.account}:6443`;
  const record = accountRecord({ name: o.account, agentId: o.agentId, apiServerHost: host });
  return [
    {
      account: o.account,
      replica: o.replica,
      replicaUrl: `http://${o.replica}:7002`,
      sessionId: o.sessionId,
      agentId: o.agentId,
      cluster: { host, fingerprint: record.caFingerprint },
      leaseMs: o.leaseMs ?? 60_000,
      failedHandoverMs: 60_000,
      shareLoad: o.shareLoad ?? false,
    },
    record,
  ];
}

/** A store write of ConfigMap `name` (account dev, namespace ns) at `rv`: ADDED with `{}` unless `over` says more. */
export function storeChange(name: string, rv: string, over: Partial<StoreChange> = {}) {
  const change: StoreChange = {
    type: 'ADDED',
    account: 'dev',
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace: 'ns',
    name,
    uid: `uid-${name}`,
    resourceVersion: rv,
    json: '{}',
    ...over,
  };
  return { op: 'change' as const, change };
}

/** A kork Artifact as Clouddriver serialises a manifest's artifacts (NON_NULL: no location when there is none). */
export function korkArtifact(type: string, name: string, reference = name) {
  return { type, customKind: false, name, reference, metadata: {} };
}

/**
 * A normalized patchManifest of Widget `ledger` on account `dev`: with `json`, an append to spec.applied (not
 * idempotent: run twice, it appends twice); otherwise a merge of spec.a.
 */
export function patchOperation(strategy: PatchStrategy): NormalizedOperation & { type: 'patchManifest' } {
  return {
    type: 'patchManifest',
    account: 'dev',
    payload: {
      target: { location: 'ns', kind: 'Widget', name: 'ledger' },
      strategy,
      patchBody: strategy === 'json' ? [{ op: 'add', path: '/spec/applied/-', value: 'r1' }] : { spec: { a: 1 } },
      record: false,
      allArtifacts: [],
      requiredArtifacts: [],
    },
  };
}
