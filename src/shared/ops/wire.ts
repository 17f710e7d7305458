import type { Operation, OperationResult } from '../proto.js';
import { exceptionResult } from './results.js';
import { isOperationType, type NormalizedOperation, type OperationType, type PayloadByType } from './types.js';

/**
 * The operation wire (proto `Operation`/`OperationResult`), one shape each way. The plugin-server parses
 * Clouddriver descriptions once, in its API layer; what travels is the normalized operation and an absolute
 * deadline. The agent checks that shape and nothing else: a payload that is not a normalized one is refused, never
 * guessed at (docs/upgrading.md says what that means for hand-made messages).
 *
 * The deadline has one meaning wherever it travels (`Operation.deadline_ms`, the peer forward's `deadlineMs`):
 * milliseconds since the epoch after which the agent gives up; 0 = none. Smaller positive numbers are refused, not
 * read as durations: a duration read on another machine is measured from an unknown moment.
 */

/** Epoch milliseconds below this (September 2001) cannot be a deadline: they are durations or garbage. */
export const MIN_EPOCH_DEADLINE_MS = 1e12;

type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];

/** Fields every normalized payload of the type carries: exactly PayloadByType's required ones (checked below). */
const REQUIRED_FIELDS = {
  deployManifest: [
    'manifests',
    'moniker',
    'enableTraffic',
    'services',
    'enableArtifactBinding',
    'requiredArtifacts',
    'optionalArtifacts',
    'skipSpecTemplateLabels',
  ],
  deleteManifest: ['location', 'kinds', 'labelSelectors', 'waitTimeoutMs', 'warnings'],
  patchManifest: ['target', 'strategy', 'patchBody', 'record', 'allArtifacts', 'requiredArtifacts'],
  scaleManifest: ['target', 'replicas'],
  undoRolloutManifest: ['target'],
  pauseRolloutManifest: ['target'],
  resumeRolloutManifest: ['target'],
  rollingRestartManifest: ['target'],
  enableManifest: ['target'],
  disableManifest: ['target'],
  runJob: ['manifest', 'application', 'requiredArtifacts', 'optionalArtifacts'],
  cleanupArtifacts: ['manifests'],
  liveGet: ['target'],
  liveList: ['location', 'kind'],
  liveLogs: ['location', 'pod', 'limitBytes'],
} as const satisfies { [K in OperationType]: readonly RequiredKeys<PayloadByType[K]>[] };

/** A required field of PayloadByType missing from REQUIRED_FIELDS fails to compile here, naming the field. */
type Unlisted = {
  [K in OperationType]: Exclude<RequiredKeys<PayloadByType[K]>, (typeof REQUIRED_FIELDS)[K][number]>;
}[OperationType];
const _everyRequiredFieldListed: [Unlisted] extends [never] ? true : Unlisted = true;

/**
 * The ServerMessage.operation for one normalized operation. `sentBeforeOnSessions`: the sessions of earlier
 * deliveries of the id whose outcome never came back (`Operation.sent_before_on_sessions`).
 */
export function operationMessage(
  operationId: string,
  op: NormalizedOperation,
  deadlineMs: number,
  sentBeforeOnSessions: string[] = [],
): Operation {
  return {
    operationId,
    account: op.account,
    type: op.type,
    payloadJson: Buffer.from(JSON.stringify(op.payload)),
    deadlineMs,
    sentBeforeOnSessions,
  };
}

export type DecodedOperation =
  | { ok: true; op: NormalizedOperation; deadlineMs: number }
  /** code: SA_ERR_INVALID_INPUT for a malformed message, SA_ERR_TIMEOUT for a deadline already passed. */
  | { ok: false; code: 'SA_ERR_INVALID_INPUT' | 'SA_ERR_TIMEOUT'; error: string; retryable: boolean };

/** Checks one ServerMessage.operation against the wire's shape; `nowMs` is the receiver's clock. */
export function decodeOperation(msg: Operation, nowMs: number): DecodedOperation {
  const invalid = (error: string): DecodedOperation => ({
    ok: false,
    code: 'SA_ERR_INVALID_INPUT',
    error: `operation ${msg.operationId}: ${error}`,
    retryable: false,
  });
  if (!isOperationType(msg.type)) return invalid(`unknown operation type "${msg.type}"`);
  if (!msg.account) return invalid('account is empty');
  const deadlineMs = Number(msg.deadlineMs);
  const deadlineProblem = checkDeadline(deadlineMs, nowMs);
  if (deadlineProblem === 'invalid') {
    return invalid(`deadline_ms ${deadlineMs} is not 0 or a time in milliseconds since the epoch`);
  }
  if (deadlineProblem === 'passed') {
    return {
      ok: false,
      code: 'SA_ERR_TIMEOUT',
      error: `operation ${msg.operationId}: its deadline passed ${nowMs - deadlineMs} ms before it could start`,
      retryable: true,
    };
  }
  let payload: unknown;
  try {
    payload = JSON.parse(Buffer.from(msg.payloadJson).toString('utf8'));
  } catch {
    return invalid('payload_json is not JSON');
  }
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) {
    return invalid(`payload_json must be a JSON object (a normalized ${msg.type} payload)`);
  }
  const required: readonly string[] = REQUIRED_FIELDS[msg.type];
  const missing = required.filter((f) => !(f in payload));
  if (missing.length > 0) {
    return invalid(
      `payload_json is not a normalized ${msg.type} payload: it lacks ${missing.join(', ')} ` +
        '(the stream carries normalized operations only; post Clouddriver descriptions to the REST API)',
    );
  }
  return { ok: true, op: { type: msg.type, account: msg.account, payload } as NormalizedOperation, deadlineMs };
}

/** undefined: a usable deadline (0 = none); `invalid`: not an epoch time; `passed`: already over at `nowMs`. */
export function checkDeadline(deadlineMs: number, nowMs: number): 'invalid' | 'passed' | undefined {
  if (deadlineMs === 0) return undefined;
  if (!Number.isSafeInteger(deadlineMs) || deadlineMs < MIN_EPOCH_DEADLINE_MS) return 'invalid';
  return deadlineMs <= nowMs ? 'passed' : undefined;
}

/** What the agent puts in OperationResult.result_json. */
export interface ResultBody {
  /** The Clouddriver result object, or the EXCEPTION object when the operation failed. */
  result?: unknown;
  /** Progress lines for the task history, in order. */
  messages?: string[];
  /** SA_ERR_* code of a failure. */
  errorCode?: string;
  /** True when running it again may succeed. */
  retryable?: boolean;
}

/** The OperationResult answering `operationId`. */
export function resultMessage(
  operationId: string,
  r: { ok: boolean; error?: string | undefined; resourceVersions: Record<string, string> } & ResultBody,
): OperationResult {
  const body: ResultBody = { result: r.result, messages: r.messages, errorCode: r.errorCode, retryable: r.retryable };
  return {
    operationId,
    ok: r.ok,
    error: r.error ?? '',
    resultJson: Buffer.from(JSON.stringify(body)),
    resourceVersions: r.resourceVersions,
  };
}

/** A failure answered before the operation ran (bad message, unknown account, deadline passed). */
export function failureMessage(
  msg: Pick<Operation, 'operationId' | 'type'>,
  failure: { code: string; error: string; retryable: boolean },
): OperationResult {
  // An unknown type still gets Clouddriver's EXCEPTION shape; the live read's is the plainest.
  const type = isOperationType(msg.type) ? msg.type : 'liveGet';
  return resultMessage(msg.operationId, {
    ok: false,
    error: failure.error,
    result: exceptionResult(type, failure.error, { retryable: failure.retryable }),
    messages: [],
    errorCode: failure.code,
    retryable: failure.retryable,
    resourceVersions: {},
  });
}
