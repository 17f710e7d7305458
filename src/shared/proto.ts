/**
 * Glue around the generated protocol (src/proto, DO NOT EDIT there): one import for both runtimes, plus the
 * few rules both sides must agree on (resourceVersion ordering, kind keys, protocol constants).
 */
export * from '../proto/scaleagent/v1/agent.js';
export { fileDescriptorSetBase64, healthFileDescriptorSetBase64 } from '../proto/scaleagent/v1/descriptor.js';

import type { KindKey } from '../proto/scaleagent/v1/agent.js';

/** Protocol revision spoken by this build (Hello.protocol_version). */
export const PROTOCOL_VERSION = 1;

/** Fully qualified gRPC service name, for health checks and reflection. */
export const AGENT_SERVICE_NAME = 'scaleagent.v1.AgentService';

/** Defaults the server announces in Welcome unless configured otherwise. */
export const DEFAULT_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;
export const DEFAULT_MAX_UNACKED_BYTES = 8 * 1024 * 1024;
export const DEFAULT_HEARTBEAT_INTERVAL_SECONDS = 15;

const INTEGER = /^\d+$/;

/**
 * Orders two resourceVersions: negative when `a` is older, 0 when equal, positive when newer, `undefined` when
 * they cannot be ordered. Kubernetes calls resourceVersions opaque, but on etcd they are integers (the etcd
 * revision) and only integers are comparable; comparing them as strings would put "9" after "10".
 */
export function compareResourceVersions(a: string, b: string): number | undefined {
  if (a === b) return 0;
  if (INTEGER.test(a) && INTEGER.test(b)) {
    // Digit strings of one length order like their numbers, and without leading zeros the longer is the larger;
    // BigInt (allocating two of them per change on the ingest path) is left for leading zeros.
    if (a.length === b.length) return a < b ? -1 : a > b ? 1 : 0;
    if (a.charCodeAt(0) !== 0x30 && b.charCodeAt(0) !== 0x30) return a.length < b.length ? -1 : 1;
    const x = BigInt(a);
    const y = BigInt(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  return undefined;
}

/**
 * Whether a change at `incoming` may replace what is stored at `stored`. Unorderable versions (never on etcd)
 * fall back to last-writer-wins, because refusing them would freeze the object forever.
 */
export function isNewerResourceVersion(incoming: string, stored: string | undefined): boolean {
  if (stored === undefined || stored === '') return true;
  const c = compareResourceVersions(incoming, stored);
  return c === undefined ? incoming !== stored : c > 0;
}

/** "apps/v1" → { group: 'apps', version: 'v1' }; "v1" → core group. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

export function apiVersionOf(group: string, version: string): string {
  return group ? `${group}/${version}` : version;
}

/** "Deployment.apps", "ConfigMap" (core) — the name Kubernetes users write in kinds/omitKinds. */
export function qualifiedKind(group: string, kind: string): string {
  return group ? `${kind}.${group}` : kind;
}

export function kindKey(apiVersion: string, kind: string, extra: Partial<KindKey> = {}): KindKey {
  const { group, version } = parseApiVersion(apiVersion);
  return { group, version, kind, resource: '', namespaced: false, ...extra };
}
