/**
 * What the plugin-server checks of each object an agent sends, wherever the check runs (the session's thread for
 * small batches, a check worker for large ones: check-pool.ts): the text parses as a JSON object, its keys under
 * the cache's registered indexes (store.ts IndexDefinition), and a Secret's data stripped. Parsing every object once is the largest ingest
 * cost (bench/profiles/stream-throughput.md) and the price of never storing what cannot be served: a body that is
 * not a JSON object would otherwise be stored and break every later read of its account.
 */
import { NO_KEYS, type IndexDefinition, type IndexKeys, type IndexOptions } from '../cache/store.js';

export interface ObjectToCheck {
  text: string;
  group: string;
  apiVersion: string;
  kind: string;
  /** A deletion: the object is checked, but indexes nothing. */
  deleted: boolean;
  options: IndexOptions;
}

/** `json` is set only when the stored text differs from what was sent (a Secret's data removed). */
export type CheckedObject = { index: IndexKeys; json?: string } | { error: string };

/** The keys of every registered index; one definition's own answer when there is one (the usual case). */
function keysOf(
  indexes: readonly IndexDefinition[],
  group: string,
  kind: string,
  manifest: Record<string, unknown>,
  options: IndexOptions,
): IndexKeys {
  if (indexes.length === 1) return indexes[0]!.keys(group, kind, manifest, options);
  let out: Record<string, string> | undefined;
  for (const d of indexes) {
    const k = d.keys(group, kind, manifest, options);
    if (k !== NO_KEYS) out = { ...out, ...k };
  }
  return out ?? NO_KEYS;
}

export function checkObject(o: ObjectToCheck, indexes: readonly IndexDefinition[]): CheckedObject {
  let obj: unknown;
  try {
    obj = JSON.parse(o.text);
  } catch {
    return { error: 'object_json is not valid JSON' };
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    return { error: 'object_json must be a JSON object' };
  }
  const manifest = obj as Record<string, unknown>;
  const index = o.deleted || indexes.length === 0 ? NO_KEYS : keysOf(indexes, o.group, o.kind, manifest, o.options);
  const secret = o.kind === 'Secret' && (o.apiVersion === 'v1' || o.apiVersion.endsWith('/v1'));
  if (secret && ('data' in manifest || 'stringData' in manifest)) {
    // Defence in depth: agents watch Secrets as metadata only, but a Secret's data must never be stored even if
    // one sends it.
    delete manifest.data;
    delete manifest.stringData;
    return { index, json: JSON.stringify(manifest) };
  }
  return { index };
}
