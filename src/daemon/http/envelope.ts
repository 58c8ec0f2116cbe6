import type { ServerResponse } from 'node:http';
import { DomainError, RateLimitedError, type ErrorCode } from '../errors.js';

export interface Envelope {
  code: 'SUCCESS' | ErrorCode;
  message: string | null;
  data: unknown;
  meta: Record<string, unknown> | null;
  timestamp: string;
}

const STATUS: Record<ErrorCode, number> = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  FORBIDDEN: 403,
  ACCOUNT_DISABLED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  VERSION_YANKED: 409,
  INCOMPATIBLE_VERSION: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  RATE_LIMITED: 429,
  WEBHOOK_REJECTED: 401,
  WEBHOOK_FAILED: 500,
  INTERNAL_ERROR: 500,
  UNAVAILABLE: 503,
};

export const statusOf = (code: ErrorCode): number => STATUS[code];

/** Headers every response carries. Cache-Control: API answers are per-caller and live. */
function writeCommonHeaders(res: ServerResponse): void {
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('cache-control', 'no-store');
}

export function sendEnvelope(
  res: ServerResponse,
  status: number,
  body: Omit<Envelope, 'timestamp'>,
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  writeCommonHeaders(res);
  if (status === 204) {
    res.statusCode = 204;
    res.end();
    return;
  }
  const json = JSON.stringify({
    code: body.code,
    message: body.message,
    data: body.data === undefined ? null : body.data,
    meta: body.meta,
    timestamp: new Date().toISOString(),
  });
  res.statusCode = status;
  res.setHeader('content-type', 'application/json; charset=utf-8');
  res.setHeader('content-length', Buffer.byteLength(json));
  res.end(json);
}

export function sendSuccess(res: ServerResponse, status: number, data: unknown, meta: Record<string, unknown> | null = null): void {
  sendEnvelope(res, status, { code: 'SUCCESS', message: null, data, meta });
}

/**
 * The one place where errors become responses. Anything that is not a
 * DomainError is a bug or a fault: the caller gets a generic 500, the details
 * go to the log through `report`.
 */
export function sendError(res: ServerResponse, error: unknown, report: (error: unknown) => void): void {
  if (error instanceof DomainError) {
    if (error instanceof RateLimitedError) res.setHeader('retry-after', String(error.retryAfterSeconds));
    sendEnvelope(res, statusOf(error.code), { code: error.code, message: error.message, data: null, meta: error.meta });
    return;
  }
  report(error);
  sendEnvelope(res, 500, { code: 'INTERNAL_ERROR', message: 'internal error', data: null, meta: null });
}
