/**
 * What the plugin-server checks of each agent message before it may reach the store, and the conversion of a
 * change batch into store changes: pure functions, so every rule is unit-tested without a stream
 * (test/unit/plugin-server/ingest-wire.test.ts). A violation throws ProtocolError, which closes that one stream,
 * never the server.
 */
import { status as GrpcStatus } from '@grpc/grpc-js';
import { groupOf } from '../../shared/kinds.js';
import {
  ChangeType,
  PROTOCOL_VERSION,
  type Account,
  type AgentMessage,
  type Change,
  type ChangeBatch,
  type Hello,
  type KindKey,
} from '../../shared/proto.js';
import type { SharedText } from '../cache/shared-text.js';
import {
  DEFAULT_INDEX_OPTIONS,
  NO_KEYS,
  type ChangeKind,
  type IndexDefinition,
  type IndexKeys,
  type IndexOptions,
  type ScopeKey,
  type StoreChange,
} from '../cache/store.js';
import { batchText, type BatchText } from './batch-text.js';
import { CheckBatchBuilder } from './check-batch.js';
import { checkObject } from './object-check.js';

/** A protocol violation: closes this one stream with INVALID_ARGUMENT/FAILED_PRECONDITION, never the server. */
export class ProtocolError extends Error {
  constructor(
    message: string,
    readonly grpcCode: GrpcStatus = GrpcStatus.INVALID_ARGUMENT,
  ) {
    super(message);
  }
}

// Kubernetes names are ASCII; anything else in a key field is a broken or hostile agent (and would poison the
// MySQL ASCII key columns, closing the stream again on every replay).
const KEY_TEXT = /^[\x21-\x7e]+$/;
const ROLE = /^\S{1,1024}$/u;
const API_VERSION = /^([a-z0-9]([a-z0-9.-]*[a-z0-9])?\/)?[a-z0-9]+$/;
const KIND = /^[A-Za-z][A-Za-z0-9]*$/;

/** The field of the message that is set ('empty' when none): for metrics and errors. */
export function messageType(m: AgentMessage): string {
  for (const [k, v] of Object.entries(m)) if (v !== undefined) return k;
  return 'empty';
}

export function validateHello(h: Hello, maxAccounts: number): void {
  if (!h.agentId || h.agentId.length > 253 || !KEY_TEXT.test(h.agentId)) {
    throw new ProtocolError('hello: agent_id must be 1-253 printable ASCII characters');
  }
  if (h.protocolVersion > PROTOCOL_VERSION) {
    throw new ProtocolError(
      `hello: protocol version ${h.protocolVersion} is newer than this server's ${PROTOCOL_VERSION}`,
      GrpcStatus.FAILED_PRECONDITION,
    );
  }
  validateAccounts(h.accounts, maxAccounts);
}

export function validateAccounts(accounts: Account[], maxAccounts: number): void {
  if (accounts.length > maxAccounts) throw new ProtocolError(`${accounts.length} accounts exceed ${maxAccounts}`);
  for (const a of accounts) {
    for (const role of [...(a.permissions?.read ?? []), ...(a.permissions?.write ?? [])]) {
      // As the agent config schema allows them: a role with whitespace silently matches nobody in Fiat.
      if (!ROLE.test(role)) {
        throw new ProtocolError(`account ${a.name}: invalid role ${JSON.stringify(role.slice(0, 80))} in permissions`);
      }
    }
  }
}

/** Data messages carry strictly increasing seq (what the server acknowledges); returns the new last seq. */
export function nextSeq(last: number, seq: number): number {
  if (!Number.isSafeInteger(seq) || seq <= last) {
    throw new ProtocolError(`seq ${seq} does not follow ${last}: data messages must carry increasing seq`);
  }
  return seq;
}

/** A SyncStart, SyncEnd or Bookmark, checked: where it applies and up to which resourceVersion. */
export interface ScopedMessage {
  kind: 'syncStart' | 'syncEnd' | 'bookmark';
  seq: number;
  scope: ScopeKey;
  version: string;
  resourceVersion: string;
}

/** The SyncStart, SyncEnd or Bookmark in `m`, checked (seq order is the caller's: nextSeq). */
export function scopedMessage(m: AgentMessage): ScopedMessage {
  const scoped = m.syncStart ?? m.syncEnd ?? m.bookmark;
  if (!scoped) throw new ProtocolError(`unknown or empty message (${messageType(m)})`);
  const kind = m.syncStart ? 'syncStart' : m.syncEnd ? 'syncEnd' : 'bookmark';
  const key = validateKindKey(scoped.kind, kind);
  if (scoped.namespace && !KEY_TEXT.test(scoped.namespace)) throw new ProtocolError(`${kind}: invalid namespace`);
  const resourceVersion = m.syncEnd?.resourceVersion ?? m.bookmark?.resourceVersion ?? '';
  if (kind !== 'syncStart' && (!resourceVersion || resourceVersion.length > 64 || !KEY_TEXT.test(resourceVersion))) {
    throw new ProtocolError(`${kind}: invalid resource_version`);
  }
  return {
    kind,
    seq: scoped.seq,
    scope: { account: scoped.account, group: key.group, kind: key.kind, namespace: scoped.namespace },
    version: key.version,
    resourceVersion,
  };
}

function validateKindKey(k: KindKey | undefined, where: string): KindKey {
  if (!k || !KIND.test(k.kind) || !/^[a-z0-9]+$/.test(k.version) || (k.group && !API_VERSION.test(`${k.group}/v1`))) {
    throw new ProtocolError(`${where}: invalid kind key ${JSON.stringify(k)}`);
  }
  return k;
}

/** A change batch as store changes: checked here, or with `deferred` still to be checked by a thread. */
export interface ConvertedBatch {
  changes: StoreChange[];
  /** What the batch costs the flow-control window (its objects' text plus a fixed overhead per change). */
  bytes: number;
  /** Set when the objects are left to a check thread (check-pool.ts). */
  deferred?: CheckBatchBuilder | undefined;
}

/**
 * Converts and checks a batch's changes. `indexes` are the cache's registered indexes, `indexOptions` gives each
 * account's indexing choices; with `defer` the
 * objects' JSON checks are gathered for a thread instead of run here (the key fields are checked here either way).
 */
export function convertBatch(
  b: ChangeBatch,
  options: {
    maxChanges: number;
    defer: boolean;
    indexes: readonly IndexDefinition[];
    indexOptions: (account: string) => IndexOptions;
  },
): ConvertedBatch {
  if (b.changes.length > options.maxChanges) {
    throw new ProtocolError(`batch of ${b.changes.length} changes exceeds ${options.maxChanges}`);
  }
  let bytes = 0;
  const changes: StoreChange[] = new Array<StoreChange>(b.changes.length);
  const deferred = options.defer ? new CheckBatchBuilder(b.changes) : undefined;
  let prev: StoreChange | undefined;
  let indexOptions = DEFAULT_INDEX_OPTIONS;
  const text = batchText(b.changes.map((c) => c.objectJson));
  for (let i = 0; i < b.changes.length; i++) {
    const c = b.changes[i]!;
    if (c.account !== prev?.account) indexOptions = options.indexOptions(c.account);
    const sc = toStoreChange(c, i, prev, options.indexes, indexOptions, deferred, text);
    bytes += sc.json.length + 256;
    changes[i] = prev = sc;
  }
  return { changes, bytes, deferred };
}

const CHANGE_TYPES: Record<number, ChangeKind> = {
  [ChangeType.CHANGE_TYPE_ADDED]: 'ADDED',
  [ChangeType.CHANGE_TYPE_MODIFIED]: 'MODIFIED',
  [ChangeType.CHANGE_TYPE_DELETED]: 'DELETED',
};

/**
 * Validates one change: key fields, and the object parsed as a JSON object (Secrets also stripped of data) — here,
 * or, with `deferred`, by a check thread before the batch is written. `prev` is the change before it in the batch:
 * key fields equal to its were already validated.
 */
function toStoreChange(
  c: Change,
  index: number,
  prev: StoreChange | undefined,
  indexes: readonly IndexDefinition[],
  options: IndexOptions,
  deferred?: CheckBatchBuilder,
  text?: BatchText,
): StoreChange {
  const type = CHANGE_TYPES[c.type];
  if (!type) throw new ProtocolError(`${changeAt(c, index)}: invalid type ${c.type}`);
  if (prev === undefined || c.account !== prev.account || c.apiVersion !== prev.apiVersion || c.kind !== prev.kind) {
    if (!c.account || !API_VERSION.test(c.apiVersion) || !KIND.test(c.kind)) {
      throw new ProtocolError(`${changeAt(c, index)}: account, api_version and kind are required`);
    }
  }
  if (!c.name || c.name.length > 253 || !KEY_TEXT.test(c.name)) {
    throw new ProtocolError(`${changeAt(c, index)}: invalid name`);
  }
  if (c.namespace && c.namespace !== prev?.namespace && (c.namespace.length > 63 || !KEY_TEXT.test(c.namespace))) {
    throw new ProtocolError(`${changeAt(c, index)}: invalid namespace`);
  }
  if (!c.resourceVersion || c.resourceVersion.length > 64 || !KEY_TEXT.test(c.resourceVersion)) {
    throw new ProtocolError(`${changeAt(c, index)}: invalid resource_version`);
  }
  if (c.uid.length > 64 || (c.uid && !KEY_TEXT.test(c.uid))) {
    throw new ProtocolError(`${changeAt(c, index)}: invalid uid`);
  }
  let json = '';
  let shared: SharedText | undefined;
  let keys: IndexKeys = NO_KEYS;
  if (c.objectJson.length > 0) {
    const bytes = Buffer.from(c.objectJson.buffer, c.objectJson.byteOffset, c.objectJson.byteLength);
    const slice = text?.textOf(bytes);
    if (slice !== undefined) {
      json = slice;
      shared = text!.shared;
    } else {
      json = bytes.toString('utf8');
    }
    if (deferred) {
      // Checked by a worker before the batch is written (its keys and a Secret's stripped text filled in then).
      deferred.add(bytes, groupOf(c.apiVersion), c.apiVersion, c.kind, type === 'DELETED', options);
    } else {
      const checked = checkObject(
        {
          text: json,
          group: groupOf(c.apiVersion),
          apiVersion: c.apiVersion,
          kind: c.kind,
          deleted: type === 'DELETED',
          options,
        },
        indexes,
      );
      if ('error' in checked) throw new ProtocolError(`${changeAt(c, index)}: ${checked.error}`);
      keys = checked.index;
      if (checked.json !== undefined) {
        json = checked.json;
        shared = undefined;
      }
    }
  } else if (type !== 'DELETED') {
    throw new ProtocolError(`${changeAt(c, index)}: object_json is required for ${type}`);
  } else {
    deferred?.add(undefined, '', c.apiVersion, c.kind, true, options);
  }
  // Fields equal to the previous change's take its string instances: the decoded copies die young, and the cache,
  // which keeps apiVersion, kind and namespace with every object, holds one copy per run instead of one per object.
  const same = prev !== undefined && c.account === prev.account && c.apiVersion === prev.apiVersion;
  return {
    type,
    account: same ? prev.account : c.account,
    apiVersion: same ? prev.apiVersion : c.apiVersion,
    kind: prev !== undefined && c.kind === prev.kind ? prev.kind : c.kind,
    namespace: prev !== undefined && c.namespace === prev.namespace ? prev.namespace : c.namespace,
    name: c.name,
    uid: c.uid,
    resourceVersion: c.resourceVersion,
    json,
    // Always present (undefined when not sliced), so every StoreChange has one shape.
    text: shared,
    ...(keys !== NO_KEYS ? { index: keys } : {}),
  };
}

/** How errors name a change of a batch. */
export function changeAt(c: Pick<Change, 'kind' | 'namespace' | 'name'>, index: number): string {
  return `change ${index} (${c.kind} ${c.namespace}/${c.name})`;
}
