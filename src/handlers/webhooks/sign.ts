/**
 * The sender's side of each scheme, for tests, documentation and outgoing
 * deliveries. Each returns the header value a sender would put on the wire.
 */
import { GITHUB_SIGNATURE_PREFIX } from './github.js';
import { hmacSha256 } from './shared.js';
import { slackDigest } from './slack.js';
import { standardWebhooksDigest, standardWebhooksKey } from './standard-webhooks.js';
import { stripeDigest } from './stripe.js';

type Body = Buffer | string;

function unixSeconds(timestampSeconds: number): string {
  if (!Number.isSafeInteger(timestampSeconds) || timestampSeconds < 0) {
    throw new RangeError('timestampSeconds must be a whole number of seconds since the epoch');
  }
  return String(timestampSeconds);
}

/** Bare lowercase hex, as the `hmac-sha256` scheme expects in the configured header. */
export function signHmacSha256(secret: string, body: Body): string {
  return hmacSha256(secret, [body]).toString('hex');
}

/** `x-hub-signature-256` */
export function signGithub(secret: string, body: Body): string {
  return GITHUB_SIGNATURE_PREFIX + signHmacSha256(secret, body);
}

/** `stripe-signature` with one v1 entry. */
export function signStripe(secret: string, timestampSeconds: number, body: Body): string {
  const timestamp = unixSeconds(timestampSeconds);
  return `t=${timestamp},v1=${stripeDigest(secret, timestamp, body).toString('hex')}`;
}

/** `x-slack-signature`; send `timestampSeconds` in `x-slack-request-timestamp`. */
export function signSlack(secret: string, timestampSeconds: number, body: Body): string {
  return `v0=${slackDigest(secret, unixSeconds(timestampSeconds), body).toString('hex')}`;
}

/**
 * One `v1,<base64>` entry for `webhook-signature`; send `id` in `webhook-id`
 * and `timestampSeconds` in `webhook-timestamp`. Join several entries with a
 * space while rotating secrets. A secret that is not `whsec_<base64>` (or
 * bare base64) throws WebhookConfigError.
 */
export function signStandardWebhook(secret: string, id: string, timestampSeconds: number, body: Body): string {
  const digest = standardWebhooksDigest(standardWebhooksKey(secret), id, unixSeconds(timestampSeconds), body);
  return `v1,${digest.toString('base64')}`;
}
