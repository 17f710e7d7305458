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
