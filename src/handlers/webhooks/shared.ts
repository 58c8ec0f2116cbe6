import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { DomainError } from '../../daemon/errors.js';
import type { VerifiedCall, VerifierSettings, WebhookRequest } from './types.js';

export const TIMESTAMP_TOLERANCE_SECONDS = 300;

/** A call whose scheme carries neither a delivery id nor an event type. */
export const UNIDENTIFIED_CALL: VerifiedCall = Object.freeze({ sourceId: null, eventType: null, challenge: null });

/** A non-empty string, else null: the body and headers come from the sender and may hold anything. */
export function textOrNull(value: unknown): string | null {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

/** A JSON object member, or undefined when `value` is not an object. */
export function member(value: unknown, name: string): unknown {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.hasOwn(value, name)
    ? (value as Record<string, unknown>)[name]
    : undefined;
}

/**
 * The sender could not prove who it is (→ 401). Messages are shown to the
 * caller: they may name a header, never the secret or an expected signature.
 */
export class WebhookRejectedError extends DomainError {
  constructor(message: string) {
    super('WEBHOOK_REJECTED', message);
    this.name = 'WebhookRejectedError';
  }
}

/** The extension is configured wrongly (→ 500): the operator must fix it, not the sender. */
export class WebhookConfigError extends DomainError {
  constructor(message: string) {
    super('WEBHOOK_FAILED', message);
    this.name = 'WebhookConfigError';
  }
}

export function hmacSha256(key: string | Buffer, parts: readonly (string | Buffer)[]): Buffer {
  const hmac = createHmac('sha256', key);
  // Fed part by part so the raw body is hashed as bytes, never round-tripped through a string.
  for (const part of parts) hmac.update(part);
  return hmac.digest();
}

/** A length mismatch is a plain refusal: timingSafeEqual would throw on it. */
export function constantTimeEqual(expected: Buffer, received: Buffer): boolean {
  return expected.length === received.length && timingSafeEqual(expected, received);
}

/** Compares against every candidate so the position of a match does not show in the timing. */
export function matchesAny(expected: Buffer, candidates: readonly Buffer[]): boolean {
  let matched = false;
  for (const candidate of candidates) matched = constantTimeEqual(expected, candidate) || matched;
  return matched;
}

/** Strings of any length compared in constant time through their fixed-length digests. */
export function constantTimeEqualStrings(expected: string, received: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();
  return timingSafeEqual(digest(expected), digest(received));
}

const SHA256_HEX = /^[0-9a-f]{64}$/i;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Hex case does not matter: the decoded bytes are compared. Undefined when not a SHA-256 hex digest. */
export function decodeSha256Hex(text: string): Buffer | undefined {
  return SHA256_HEX.test(text) ? Buffer.from(text, 'hex') : undefined;
}

/** Strict standard base64: Buffer.from would silently skip stray characters. */
export function decodeBase64(text: string): Buffer | undefined {
  return BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
}

export function requireSecret(settings: VerifierSettings): string {
  // Checked at run time too: configuration values come from storage, not from typed code.
  if (typeof settings.secret !== 'string' || settings.secret === '') {
    throw new WebhookConfigError('webhook.secret is not set');
  }
  return settings.secret;
}

/** The configured header name, lowercased to match how headers arrive. */
export function requireHeaderSetting(settings: VerifierSettings, scheme: string): string {
  const name = settings.header?.trim().toLowerCase();
  if (!name) throw new WebhookConfigError(`webhook.header is not set; the ${scheme} scheme needs the name of the header to read`);
  return name;
}

export function requireHeader(request: WebhookRequest, name: string): string {
  const value: unknown = request.headers[name];
  // typeof, not a truthiness test: a header setting such as `constructor` resolves to Object.prototype members.
  const trimmed = typeof value === 'string' ? value.trim() : '';
  if (trimmed === '') throw new WebhookRejectedError(`missing header ${name}`);
  return trimmed;
}

const UNIX_SECONDS = /^\d{1,12}$/;

export function parseTimestampSeconds(text: string, header: string): number {
  if (!UNIX_SECONDS.test(text)) throw new WebhookRejectedError(`header ${header} is not a Unix timestamp in seconds`);
  return Number(text);
}

/** Both directions: a stale timestamp may be a replay, a future one may be pre-signed for one. */
export function assertWithinTolerance(timestampSeconds: number, nowMs: number): void {
  if (Math.abs(nowMs - timestampSeconds * 1000) > TIMESTAMP_TOLERANCE_SECONDS * 1000) {
    throw new WebhookRejectedError(`timestamp is outside the ${TIMESTAMP_TOLERANCE_SECONDS} s tolerance`);
  }
}

/** See VerifiedCall.fingerprint: only the same bytes under the same signed timestamp match. */
export function signedCallFingerprint(timestamp: string, rawBody: Buffer): string {
  return `sha256:${createHash('sha256').update(`${timestamp}.`).update(rawBody).digest('hex')}`;
}

export function signatureMismatch(): WebhookRejectedError {
  return new WebhookRejectedError('signature does not match');
}
