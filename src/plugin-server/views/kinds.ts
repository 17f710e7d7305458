import { clouddriverKindName, KINDS, type SpinnakerCategory } from '../../shared/kinds.js';
import { parseKind } from '../../shared/ops/kinds.js';

/**
 * The REST reads' view of the kinds table (`src/shared/kinds.ts`): Clouddriver's names ("replicaSet"), the aliases
 * its lookup accepts, and "kind.group" for what it does not know (CRDs), the same vocabulary operation results use.
 */

export interface KindQuery {
  kind: string;
  /** undefined: any group. */
  group: string | undefined;
}

/** Resolves the kind half of a Clouddriver name ("deployment", "rs", "crontab.stable.example.com", "Widget"). */
export function resolveKind(spec: string): KindQuery {
  const ref = parseKind(spec);
  if (ref.known) return { kind: ref.known.kind, group: ref.known.group };
  return { kind: ref.name, group: ref.group };
}

/** The name Clouddriver prints for a kind: "replicaSet", "Endpoints", or "CronTab.stable.example.com". */
export function canonicalKindName(group: string, kind: string): string {
  return clouddriverKindName(group, kind);
}

/** "deployment web" → ["deployment", "web"]; split on the first space as Clouddriver does. */
export function splitFullName(fullName: string): [string, string] | undefined {
  const space = fullName.indexOf(' ');
  if (space <= 0 || space === fullName.length - 1) return undefined;
  return [fullName.slice(0, space), fullName.slice(space + 1)];
}

/** Clouddriver's `spinnakerKindMap` for /credentials?expand=true. */
export const SPINNAKER_KIND_MAP: Record<string, SpinnakerCategory> = Object.fromEntries(
  KINDS.flatMap((r) => (r.clouddriver?.category ? [[r.clouddriver.name, r.clouddriver.category]] : [])),
);
