import {
  constantTimeEqual,
  decodeSha256Hex,
  hmacSha256,
  requireHeader,
  requireSecret,
  signatureMismatch,
  textOrNull,
  WebhookRejectedError,
} from './shared.js';
import type { Verifier } from './types.js';

const GITHUB_SIGNATURE_HEADER = 'x-hub-signature-256';
const GITHUB_DELIVERY_HEADER = 'x-github-delivery';
const GITHUB_EVENT_HEADER = 'x-github-event';
export const GITHUB_SIGNATURE_PREFIX = 'sha256=';

/**
 * GitHub always prefixes the hex digest with `sha256=`; a bare digest is not
 * what it sends. The delivery id and event type headers are not signed.
 */
export const verifyGithub: Verifier = (request, settings) => {
  const secret = requireSecret(settings);
  const value = requireHeader(request, GITHUB_SIGNATURE_HEADER);
  const received = value.startsWith(GITHUB_SIGNATURE_PREFIX) ? decodeSha256Hex(value.slice(GITHUB_SIGNATURE_PREFIX.length)) : undefined;
  if (!received) throw new WebhookRejectedError(`header ${GITHUB_SIGNATURE_HEADER} is not sha256=<hex>`);
  if (!constantTimeEqual(hmacSha256(secret, [request.rawBody]), received)) throw signatureMismatch();
  return {
    sourceId: textOrNull(request.headers[GITHUB_DELIVERY_HEADER]),
    eventType: textOrNull(request.headers[GITHUB_EVENT_HEADER]),
    challenge: null,
  };
};

