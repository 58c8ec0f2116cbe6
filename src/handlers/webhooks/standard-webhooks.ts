import {
  ACCEPTED,
  assertWithinTolerance,
  decodeBase64,
  hmacSha256,
  matchesAny,
  parseTimestampSeconds,
  requireHeader,
  requireSecret,
  signatureMismatch,
  TIMESTAMP_TOLERANCE_SECONDS,
  WebhookConfigError,
} from './shared.js';
import type { Verifier } from './types.js';

export const STANDARD_WEBHOOK_ID_HEADER = 'webhook-id';
export const STANDARD_WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const STANDARD_WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
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

/**
 * HMAC-SHA256 of `<id>.<timestamp>.<raw body>`. A verified id seen again
 * within the replay window is accepted as a duplicate (200, do nothing): the
 * sender retries with the same id when it missed our answer.
 */
export const verifyStandardWebhook: Verifier = (request, settings, context) => {
  const key = standardWebhooksKey(requireSecret(settings));
  const id = requireHeader(request, STANDARD_WEBHOOK_ID_HEADER);
  const timestamp = requireHeader(request, STANDARD_WEBHOOK_TIMESTAMP_HEADER);
  const signatures = v1Signatures(requireHeader(request, STANDARD_WEBHOOK_SIGNATURE_HEADER));
  const timestampSeconds = parseTimestampSeconds(timestamp, STANDARD_WEBHOOK_TIMESTAMP_HEADER);
  assertWithinTolerance(timestampSeconds, context.now());
  if (!matchesAny(standardWebhooksDigest(key, id, timestamp, request.rawBody), signatures)) throw signatureMismatch();
  // Recorded only now, after the signature held, so unsigned ids cannot fill the cache.
  // Remembered for as long as the timestamp stays acceptable, even when that outlasts the ttl.
  const acceptableUntilMs = (timestampSeconds + TIMESTAMP_TOLERANCE_SECONDS) * 1000 + 1;
  const duplicate = context.replay.cache.seenRecently(context.replay.scope, id, acceptableUntilMs);
  return duplicate ? { accepted: true, duplicate: true } : ACCEPTED;
};
