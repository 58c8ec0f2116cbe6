import {
  assertWithinTolerance,
  constantTimeEqual,
  decodeSha256Hex,
  hmacSha256,
  member,
  parseTimestampSeconds,
  requireHeader,
  requireSecret,
  signatureMismatch,
  signedCallFingerprint,
  textOrNull,
  WebhookRejectedError,
} from './shared.js';
import type { Verifier } from './types.js';

const SLACK_SIGNATURE_HEADER = 'x-slack-signature';
const SLACK_TIMESTAMP_HEADER = 'x-slack-request-timestamp';
const VERSION = 'v0';

/**
 * `v0=<hex>` over `v0:<timestamp>:<raw body>` with the app's signing secret.
 * Slack's handshake when an endpoint is set up is signed too, so it is
 * answered only after the signature holds.
 */
export const verifySlack: Verifier = (request, settings, context) => {
  const secret = requireSecret(settings);
  const signature = requireHeader(request, SLACK_SIGNATURE_HEADER);
  const timestamp = requireHeader(request, SLACK_TIMESTAMP_HEADER);
  assertWithinTolerance(parseTimestampSeconds(timestamp, SLACK_TIMESTAMP_HEADER), context.now());
  const received = signature.startsWith(`${VERSION}=`) ? decodeSha256Hex(signature.slice(VERSION.length + 1)) : undefined;
  if (!received) throw new WebhookRejectedError(`header ${SLACK_SIGNATURE_HEADER} is not ${VERSION}=<hex>`);
  if (!constantTimeEqual(slackDigest(secret, timestamp, request.rawBody), received)) throw signatureMismatch();
  const { body } = request;
  const challenge = body.type === 'url_verification' && typeof body.challenge === 'string' ? body.challenge : null;
  const sourceId = textOrNull(body.event_id);
  return {
    sourceId,
    eventType: textOrNull(member(body.event, 'type')) ?? textOrNull(body.type),
    challenge,
    ...(sourceId === null ? { fingerprint: signedCallFingerprint(timestamp, request.rawBody) } : {}),
  };
};

export function slackDigest(secret: string, timestamp: string, body: Buffer | string): Buffer {
  return hmacSha256(secret, [`${VERSION}:${timestamp}:`, body]);
}
