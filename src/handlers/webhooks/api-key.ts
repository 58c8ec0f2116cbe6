import { UNIDENTIFIED_CALL, constantTimeEqualStrings, requireHeader, requireHeaderSetting, requireSecret, WebhookRejectedError } from './shared.js';
import type { Verifier } from './types.js';

/** The configured header carries the secret itself, compared exactly (no `Bearer` stripping). */
export const verifyApiKey: Verifier = (request, settings) => {
  const secret = requireSecret(settings);
  const header = requireHeaderSetting(settings, 'api-key');
  if (!constantTimeEqualStrings(secret, requireHeader(request, header))) {
    throw new WebhookRejectedError(`header ${header} does not hold the expected key`);
  }
  return UNIDENTIFIED_CALL;
};
