/**
 * Kinds as Clouddriver names them: canonical lowerCamel names for the kinds it knows ("replicaSet"), aliases
 * ("rs"), and `Kind.group` for kinds outside the native API groups ("CronTab.stable.example.com"). Lookups
 * ignore case, as Clouddriver's do. A view of the one kinds table (`src/shared/kinds.ts`), whose capability
 * columns mirror Clouddriver's handler interfaces, which decide which operation may run on which kind.
 */
import { clouddriverKindName, groupOf, KINDS, kindRow, NATIVE_GROUPS, type Capability } from '../kinds.js';

export { groupOf, NATIVE_GROUPS, type Capability };

export interface KnownKind {
  /** Canonical Clouddriver spelling, used in every name we output. */
  name: string;
  /** Kubernetes `kind`. */
  kind: string;
  /** API group ('' = core). */
  group: string;
  alias?: string;
  namespaced: boolean;
  /** Deployed as `<name>-vNNN` unless told otherwise. */
  versioned: boolean;
  /** Lower is deployed first. */
  priority: number;
  capabilities: Capability[];
}

/** The kinds Clouddriver registers (rows of the table with Clouddriver columns). */
export const KNOWN_KINDS: readonly KnownKind[] = KINDS.flatMap((r) =>
  r.clouddriver
    ? [
        {
          name: r.clouddriver.name,
          kind: r.kind,
          group: r.group,
          ...(r.clouddriver.alias ? { alias: r.clouddriver.alias } : {}),
          namespaced: r.namespaced,
          versioned: r.clouddriver.versioned,
          priority: r.clouddriver.priority,
          capabilities: r.clouddriver.capabilities,
        },
      ]
    : [],
);

/** Custom resources are deployed last so their definitions exist first. */
export const CUSTOM_PRIORITY = 1000;

const byLowerName = new Map<string, KnownKind>();
const byKind = new Map<string, KnownKind>();
for (const k of KNOWN_KINDS) {
  byLowerName.set(k.name.toLowerCase(), k);
  if (k.alias) byLowerName.set(k.alias, k);
  byKind.set(k.kind, k);
}

/** A kind as a client wrote it ("deployment", "rs", "CronTab.stable.example.com"), not yet resolved. */
export interface KindRef {
  /** Kind name without group, as written ("deployment", "CronTab"). */
  name: string;
  /** Group when written as `kind.group`; undefined when not given. */
  group?: string;
  /** The known kind this names, if any. */
  known?: KnownKind;
}

export function parseKind(text: string): KindRef {
  const trimmed = text.trim();
  const dot = trimmed.indexOf('.');
  const name = dot < 0 ? trimmed : trimmed.slice(0, dot);
  const group = dot < 0 ? undefined : trimmed.slice(dot + 1).toLowerCase();
  const known = byLowerName.get(name.toLowerCase());
  if (known && (group === undefined || group === known.group || (group === 'core' && known.group === ''))) {
    return { name, group: known.group, known };
  }
  return group === undefined ? { name } : { name, group };
}

export function knownKindOf(apiVersion: string, kind: string): KnownKind | undefined {
  const row = kindRow(groupOf(apiVersion), kind);
  return row?.clouddriver ? byKind.get(row.kind) : undefined;
}

/** Clouddriver's name for the kind of an object: "replicaSet", "Endpoints", "Lease.coordination.k8s.io". */
export function spinnakerKind(apiVersion: string, kind: string): string {
  return clouddriverKindName(groupOf(apiVersion), kind);
}

/** "deployment web" from an object. */
export function fullResourceName(obj: { apiVersion?: string; kind?: string; metadata?: { name?: string } }): string {
  return `${spinnakerKind(obj.apiVersion ?? '', obj.kind ?? '')} ${obj.metadata?.name ?? ''}`;
}

export interface ResourceName {
  kind: KindRef;
  name: string;
}

/** Splits "deployment web" on the first space; undefined when either half is empty. */
export function parseFullResourceName(text: string): ResourceName | undefined {
  const trimmed = text.trim();
  const space = trimmed.indexOf(' ');
  if (space <= 0) return undefined;
  const kind = trimmed.slice(0, space);
  const name = trimmed.slice(space + 1).trim();
  if (!name) return undefined;
  return { kind: parseKind(kind), name };
}

export function hasCapability(ref: KindRef, capability: Capability): boolean {
  return ref.known?.capabilities.includes(capability) ?? false;
}

/** Whether a kind is namespaced, when we can tell without asking the API server. */
export function knownNamespaced(apiVersion: string, kind: string): boolean | undefined {
  return kindRow(groupOf(apiVersion), kind)?.namespaced;
}

export function deployPriority(apiVersion: string, kind: string): number {
  return knownKindOf(apiVersion, kind)?.priority ?? (NATIVE_GROUPS.has(groupOf(apiVersion)) ? 100 : CUSTOM_PRIORITY);
}
