/**
 * The one error catalogue. Every error the product raises on purpose has a stable `SA_ERR_*` code, a
 * message that names the place (file, line, field, request), and keeps its `cause`. Codes are translated to
 * gRPC status, HTTP status or CLI exit code only at the edges (see `httpStatusOf`, `exitCodeOf`).
 */
export const ErrorCodes = {
  /** Input failed validation (schema or semantic); details say where. */
  INVALID_INPUT: { http: 400, exit: 1 },
  /** A file could not be read or parsed. */
  FILE_UNREADABLE: { http: 400, exit: 1 },
  /** Input is larger or more deeply aliased than we accept. */
  INPUT_TOO_LARGE: { http: 413, exit: 1 },
  NOT_FOUND: { http: 404, exit: 1 },
  CONFLICT: { http: 409, exit: 1 },
  UNAUTHENTICATED: { http: 401, exit: 1 },
  FORBIDDEN: { http: 403, exit: 1 },
  /** A dependency (API server, database, agent) is not reachable right now; retrying may help. */
  UNAVAILABLE: { http: 503, exit: 3 },
  TIMEOUT: { http: 504, exit: 3 },
  /** An operation stopped on request before it changed anything (a cancelled task). */
  CANCELLED: { http: 409, exit: 1 },
  /** A server this one forwards to (the upstream Clouddriver in front mode) answered nothing usable. */
  BAD_GATEWAY: { http: 502, exit: 3 },
  /** A tool the command needs (kubectl, helm, go, ...) is missing or failed. */
  TOOL_FAILED: { http: 500, exit: 2 },
  INTERNAL: { http: 500, exit: 2 },
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

/** One located problem, e.g. a schema violation at `topology.yaml:12:5` `/agents/0/accounts/1/name`. */
export interface ErrorDetail {
  message: string;
  file?: string;
  line?: number;
  column?: number;
  path?: string;
}

export class ScaleAgentError extends Error {
  readonly code: `SA_ERR_${ErrorCode}`;
  readonly kind: ErrorCode;
  readonly details: ErrorDetail[];

  constructor(kind: ErrorCode, message: string, options: { cause?: unknown; details?: ErrorDetail[] } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ScaleAgentError';
    this.kind = kind;
    this.code = `SA_ERR_${kind}`;
    this.details = options.details ?? [];
  }

  toJSON(): { code: string; message: string; details: ErrorDetail[] } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export function isScaleAgentError(e: unknown): e is ScaleAgentError {
  return e instanceof ScaleAgentError;
}

export function httpStatusOf(e: unknown): number {
  return isScaleAgentError(e) ? ErrorCodes[e.kind].http : 500;
}

export function exitCodeOf(e: unknown): number {
  return isScaleAgentError(e) ? ErrorCodes[e.kind].exit : 2;
}

/** `file:line:column path: message`, the form editors and CI annotators understand. */
export function formatDetail(d: ErrorDetail): string {
  const where = [d.file, d.line, d.column].filter((x) => x !== undefined).join(':');
  const path = d.path ? `${d.path}: ` : '';
  return `${where ? `${where} ` : ''}${path}${d.message}`;
}

/** What a Kubernetes request was trying to do, so a failure can say "cannot patch deployments.apps "web" in ...". */
export interface KubeRequestIntent {
  verb: string;
  /** "deployments.apps", "configmaps", "deployments.apps/scale". */
  resource: string;
  namespace?: string;
  name?: string;
}

const KUBE_STATUS_KINDS: Record<number, ErrorCode> = {
  400: 'INVALID_INPUT',
  401: 'UNAUTHENTICATED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  409: 'CONFLICT',
  410: 'CONFLICT',
  413: 'INPUT_TOO_LARGE',
  415: 'INVALID_INPUT',
  422: 'INVALID_INPUT',
  429: 'UNAVAILABLE',
  500: 'INTERNAL',
  503: 'UNAVAILABLE',
  504: 'TIMEOUT',
};

/**
 * An error status from a Kubernetes API server — an HTTP answer or a watch ERROR event's Status — for watches and
 * operations alike. `kind` follows the status (403 → FORBIDDEN, 429/5xx → UNAVAILABLE), so the edges translate it
 * like any other catalogued error; `status` and `reason` stay for callers that branch on them (410 Gone, 409).
 */
export class KubeApiError extends ScaleAgentError {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly intent?: KubeRequestIntent,
    /** Seconds the server asked us to wait (Retry-After on 429/503). */
    readonly retryAfterSeconds?: number,
  ) {
    super(KUBE_STATUS_KINDS[status] ?? (status >= 500 ? 'UNAVAILABLE' : 'INTERNAL'), message);
    this.name = 'KubeApiError';
  }
}

export const isKubeStatus = (e: unknown, status: number): e is KubeApiError =>
  e instanceof KubeApiError && e.status === status;

export function describeKubeIntent(i: KubeRequestIntent): string {
  const name = i.name ? ` "${i.name}"` : '';
  const ns = i.namespace ? ` in namespace "${i.namespace}"` : '';
  return `${i.verb} ${i.resource}${name}${ns}`;
}
