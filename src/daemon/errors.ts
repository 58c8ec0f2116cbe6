/**
 * Errors are values with a code. Domain code throws them; the HTTP layer maps
 * each code to a status once (src/contract/errors.ts). Messages must be safe to
 * show to the caller: no paths, no secrets.
 */
import type { ErrorCode } from '../contract/errors.js';

export type { ErrorCode };

export interface ValidationIssue {
  path: string;
  message: string;
}

export class DomainError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly meta: Record<string, unknown> | null = null,
  ) {
    super(message);
    this.name = 'DomainError';
  }
}

export class RateLimitedError extends DomainError {
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super('RATE_LIMITED', message);
  }
}

export const notFound = (message: string) => new DomainError('NOT_FOUND', message);
export const conflict = (message: string) => new DomainError('CONFLICT', message);
export const forbidden = (message: string) => new DomainError('FORBIDDEN', message);
export const unauthorized = (message: string) => new DomainError('UNAUTHORIZED', message);
export const unavailable = (message: string) => new DomainError('UNAVAILABLE', message);

/** A single-field validation failure raised by domain rules (not by a schema). */
export function invalid(path: string, message: string): DomainError {
  return new DomainError('VALIDATION_ERROR', message, { issues: [{ path, message }] });
}

/** A `cursor` the listing cannot take (400): one that does not decode, or another listing's or workspace's. */
export function invalidCursor(message: string): DomainError {
  return new DomainError('VALIDATION_ERROR', `cursor: ${message}`, { issues: [{ path: 'cursor', message }] });
}

/** A cursor that does not decode, also as a store reads its own part of it (one another backend made, or a forged one). */
export const notACursor = () => invalidCursor('is not a cursor of this listing');

/**
 * A fault that prevents the daemon from starting (corrupt data file, lock held,
 * port taken). The CLI prints the message and exits 1.
 */
export class StartupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StartupError';
  }
}

/** What went wrong, fit for a log line or a dead letter: the message's first line, at most 500 characters. */
export function describeFault(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n', 1)[0]!.slice(0, 500);
}
