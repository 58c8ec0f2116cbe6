/**
 * Every error code of the API and the HTTP status it is answered with. The
 * daemon answers by this table; clients and the API document read it.
 */
export const ERROR_STATUS = {
  VALIDATION_ERROR: 400,
  INVALID_JSON: 400,
  UNAUTHORIZED: 401,
  INVALID_CREDENTIALS: 401,
  WEBHOOK_REJECTED: 401,
  FORBIDDEN: 403,
  ACCOUNT_DISABLED: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONFLICT: 409,
  VERSION_YANKED: 409,
  INCOMPATIBLE_VERSION: 409,
  CONSENT_REQUIRED: 409,
  IDEMPOTENCY_KEY_REUSED: 409,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  MISDIRECTED_REQUEST: 421,
  RATE_LIMITED: 429,
  INTERNAL_ERROR: 500,
  WEBHOOK_FAILED: 500,
  UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode];

export const statusOf = (code: ErrorCode): ErrorStatus => ERROR_STATUS[code];
