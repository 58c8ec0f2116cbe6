import {
  assertWithinTolerance,
  decodeSha256Hex,
  hmacSha256,
  matchesAny,
  parseTimestampSeconds,
  requireHeader,
  requireSecret,
  signatureMismatch,
  signedCallFingerprint,
  textOrNull,
  WebhookRejectedError,
} from './shared.js';
import type { Verifier } from './types.js';

const STRIPE_SIGNATURE_HEADER = 'stripe-signature';

interface StripeSignatureHeader {
  timestamp: string;
  v1: Buffer[];
}

/**
 * `t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…]`. Several v1 entries appear while an
 * endpoint secret is being rolled; v0 and unknown schemes are ignored, as
 * Stripe's own libraries do.
 */
function parseHeader(value: string): StripeSignatureHeader {
  const timestamps: string[] = [];
  const v1: Buffer[] = [];
  for (const item of value.split(',')) {
    const separator = item.indexOf('=');
    if (separator < 0) continue;
    const name = item.slice(0, separator).trim();
    const content = item.slice(separator + 1).trim();
    if (name === 't') timestamps.push(content);
    if (name === 'v1') {
      const digest = decodeSha256Hex(content);
      if (digest) v1.push(digest);
    }
  }
  // Two timestamps would leave it ambiguous which one the signature covers.
  if (timestamps.length !== 1) throw new WebhookRejectedError(`header ${STRIPE_SIGNATURE_HEADER} needs exactly one t=`);
  if (v1.length === 0) throw new WebhookRejectedError(`header ${STRIPE_SIGNATURE_HEADER} has no v1 signature`);
  return { timestamp: timestamps[0]!, v1 };
}

/** HMAC-SHA256 of `<t>.<raw body>` with the endpoint secret used as is, `whsec_` included. The event's `id` and `type` are in the body. */
export const verifyStripe: Verifier = (request, settings, context) => {
  const secret = requireSecret(settings);
  const { timestamp, v1 } = parseHeader(requireHeader(request, STRIPE_SIGNATURE_HEADER));
  assertWithinTolerance(parseTimestampSeconds(timestamp, STRIPE_SIGNATURE_HEADER), context.now());
  if (!matchesAny(stripeDigest(secret, timestamp, request.rawBody), v1)) throw signatureMismatch();
  const sourceId = textOrNull(request.body.id);
  return {
    sourceId,
    eventType: textOrNull(request.body.type),
    challenge: null,
    ...(sourceId === null ? { fingerprint: signedCallFingerprint(timestamp, request.rawBody) } : {}),
  };
};

export function stripeDigest(secret: string, timestamp: string, body: Buffer | string): Buffer {
  return hmacSha256(secret, [`${timestamp}.`, body]);
}
