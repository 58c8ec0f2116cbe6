import { verifyApiKey } from './api-key.js';
import { verifyGithub } from './github.js';
import { verifyHmacSha256 } from './hmac-sha256.js';
import { WebhookConfigError } from './shared.js';
import { verifySlack } from './slack.js';
import { verifyStandardWebhook } from './standard-webhooks.js';
import { verifyStripe } from './stripe.js';
import { WEBHOOK_SCHEMES, type Verifier, type WebhookScheme } from './types.js';

export { TIMESTAMP_TOLERANCE_SECONDS, WebhookConfigError, WebhookRejectedError } from './shared.js';
export {
  STANDARD_WEBHOOK_ID_HEADER,
  STANDARD_WEBHOOK_SIGNATURE_HEADER,
  STANDARD_WEBHOOK_TIMESTAMP_HEADER,
} from './standard-webhooks.js';
export { signGithub, signHmacSha256, signSlack, signStandardWebhook, signStripe } from './sign.js';
export { WEBHOOK_SCHEMES };
export type { VerifiedCall, Verifier, VerifierSettings, VerifyContext, WebhookRequest, WebhookScheme } from './types.js';

const WEBHOOK_VERIFIERS: Readonly<Record<WebhookScheme, Verifier>> = Object.freeze({
  'hmac-sha256': verifyHmacSha256,
  github: verifyGithub,
  stripe: verifyStripe,
  slack: verifySlack,
  'standard-webhooks': verifyStandardWebhook,
  'api-key': verifyApiKey,
});

/** Undefined for an unknown scheme; `hasOwn` keeps names such as `constructor` from resolving. */
export function verifierFor(scheme: string): Verifier | undefined {
  return Object.hasOwn(WEBHOOK_VERIFIERS, scheme) ? WEBHOOK_VERIFIERS[scheme as WebhookScheme] : undefined;
}

/** For the endpoint: an unknown `webhook.scheme` is the operator's mistake (500), not the sender's (401). */
export function requireVerifier(scheme: string): Verifier {
  const verifier = verifierFor(scheme);
  if (!verifier) throw new WebhookConfigError(`webhook.scheme ${JSON.stringify(scheme)} is not one of ${WEBHOOK_SCHEMES.join(', ')}`);
  return verifier;
}
