import {
  assertWithinTolerance,
  decodeBase64,
  hmacSha256,
  matchesAny,
  parseTimestampSeconds,
  requireHeader,
  requireSecret,
  signatureMismatch,
  textOrNull,
  WebhookConfigError,
} from './shared.js';
import type { Verifier, WebhookRequest } from './types.js';

export const STANDARD_WEBHOOK_ID_HEADER = 'webhook-id';
export const STANDARD_WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const STANDARD_WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
/** Svix, where the specification comes from, still sends its own names for the same three headers. */
const SVIX_HEADERS = { id: 'svix-id', timestamp: 'svix-timestamp', signature: 'svix-signature' } as const;
const STANDARD_HEADERS = {
  id: STANDARD_WEBHOOK_ID_HEADER,
  timestamp: STANDARD_WEBHOOK_TIMESTAMP_HEADER,
  signature: STANDARD_WEBHOOK_SIGNATURE_HEADER,
} as const;
const SECRET_PREFIX = 'whsec_';
const VERSION_PREFIX = 'v1,';

/** `whsec_<base64>`; a secret without the prefix is read as base64 too, like the reference libraries do. */
export function standardWebhooksKey(secret: string): Buffer {
  const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = decodeBase64(encoded);
  if (!key || key.length === 0) {
    throw new WebhookConfigError('webhook.secret is not a Standard Webhooks secret (whsec_ followed by base64)');
  }
  return key;
}

export function standardWebhooksDigest(key: Buffer, id: string, timestamp: string, body: Buffer | string): Buffer {
  return hmacSha256(key, [`${id}.${timestamp}.`, body]);
}

/** Space-separated `v1,<base64>` entries; other versions (v1a, asymmetric) are not ours to check. */
function v1Signatures(value: string): Buffer[] {
  const signatures: Buffer[] = [];
  for (const entry of value.split(' ')) {
    if (!entry.startsWith(VERSION_PREFIX)) continue;
    const signature = decodeBase64(entry.slice(VERSION_PREFIX.length));
    if (signature) signatures.push(signature);
  }
  return signatures;
}

/** One set of names or the other, never a mix: the svix names only when no webhook-id is sent. */
function headerNames(request: WebhookRequest): typeof STANDARD_HEADERS | typeof SVIX_HEADERS {
  return request.headers[STANDARD_WEBHOOK_ID_HEADER] === undefined && request.headers[SVIX_HEADERS.id] !== undefined ? SVIX_HEADERS : STANDARD_HEADERS;
}

/**
 * HMAC-SHA256 of `<id>.<timestamp>.<raw body>`. The id is signed, so it can
 * serve as the message's delivery id; the sender reuses it on every retry.
 */
export const verifyStandardWebhook: Verifier = (request, settings, context) => {
  const key = standardWebhooksKey(requireSecret(settings));
  const names = headerNames(request);
  const id = requireHeader(request, names.id);
  const timestamp = requireHeader(request, names.timestamp);
  const signatures = v1Signatures(requireHeader(request, names.signature));
  assertWithinTolerance(parseTimestampSeconds(timestamp, names.timestamp), context.now());
  if (!matchesAny(standardWebhooksDigest(key, id, timestamp, request.rawBody), signatures)) throw signatureMismatch();
  return { sourceId: id, eventType: textOrNull(request.body.type), challenge: null };
};
