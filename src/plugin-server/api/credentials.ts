import type { AccountPermissions } from '../../shared/account-options.js';
import type { AccountRecord } from '../cache/store.js';
import { SPINNAKER_KIND_MAP } from '../views/kinds.js';

/**
 * `GET /credentials` and `/credentials/{name}` as Clouddriver renders a Kubernetes account
 * (KubernetesNamedAccountCredentials through CredentialsController): the summary keeps the fields Fiat and Gate
 * read to know the account and who may use it; the detail (`?expand=true`, and always for one account) adds what
 * Deck's account, namespace and kind dropdowns read.
 */

/** Fiat's reading of an account's permissions: authorization → roles. */
export type FiatPermissions = Partial<Record<keyof AccountPermissions, string[]>>;

/**
 * The permissions as Clouddriver serialises them after Fiat's Permissions.Builder: roles trimmed and lower-cased
 * (Fiat compares them lower-cased), empty ones dropped, authorizations without roles left out. `{}` means
 * unrestricted, which Fiat reads like an absent map; Clouddriver writes null there, which some clients mishandle.
 */
export function fiatPermissions(p: AccountPermissions): FiatPermissions {
  const out: FiatPermissions = {};
  for (const auth of ['READ', 'WRITE'] as const) {
    const roles = [...new Set(p[auth].map((r) => r.trim().toLowerCase()).filter((r) => r.length > 0))];
    if (roles.length > 0) out[auth] = roles;
  }
  return out;
}

/** The summary: CredentialsController keeps these keys when `expand` is not true. */
export function credentialsSummary(r: AccountRecord): Record<string, unknown> {
  return {
    name: r.name,
    environment: r.name,
    accountType: r.name,
    cloudProvider: 'kubernetes',
    type: 'kubernetes',
    // The pre-Fiat list; Clouddriver empties it whenever permissions are set, and these accounts have no other.
    requiredGroupMembership: [],
    permissions: fiatPermissions(r.permissions),
    challengeDestructiveActions: false,
    primaryAccount: false,
  };
}

/**
 * The detail. `clusterNamespaces` are the Namespace objects cached for the account: without configured
 * `namespaces`, Clouddriver lists the cluster's namespaces minus `omitNamespaces` (getDeclaredNamespaces), which
 * is what Deck offers in its namespace dropdown.
 */
export function credentialsDetail(r: AccountRecord, clusterNamespaces: readonly string[]): Record<string, unknown> {
  const omitted = new Set(r.omitNamespaces);
  return {
    ...credentialsSummary(r),
    cacheThreads: 1,
    namespaces: r.namespaces.length > 0 ? [...r.namespaces] : clusterNamespaces.filter((n) => !omitted.has(n)),
    omitNamespaces: [...r.omitNamespaces],
    kinds: [...r.kinds],
    omitKinds: [...r.omitKinds],
    spinnakerKindMap: SPINNAKER_KIND_MAP,
    dockerRegistries: [],
    onlySpinnakerManaged: r.onlySpinnakerManaged,
    cacheAllApplicationRelationships: r.cacheAllApplicationRelationships,
    enabled: true,
  };
}
