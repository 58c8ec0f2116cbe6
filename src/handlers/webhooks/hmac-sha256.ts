import {
  constantTimeEqual,
  decodeSha256Hex,
  hmacSha256,
  requireHeader,
  requireHeaderSetting,
  requireSecret,
  signatureMismatch,
  UNIDENTIFIED_CALL,
  WebhookRejectedError,
} from './shared.js';
import type { Verifier } from './types.js';

const OPTIONAL_PREFIX = 'sha256=';

/** Hex HMAC-SHA256 of the raw body, bare or `sha256=`-prefixed, in the configured header. */
export const verifyHmacSha256: Verifier = (request, settings) => {
  const secret = requireSecret(settings);
  const header = requireHeaderSetting(settings, 'hmac-sha256');
  const value = requireHeader(request, header);
  const hex = value.toLowerCase().startsWith(OPTIONAL_PREFIX) ? value.slice(OPTIONAL_PREFIX.length) : value;
  const received = decodeSha256Hex(hex);
  if (!received) throw new WebhookRejectedError(`header ${header} is not a hex HMAC-SHA256 signature`);
  if (!constantTimeEqual(hmacSha256(secret, [request.rawBody]), received)) throw signatureMismatch();
  return UNIDENTIFIED_CALL;
};
