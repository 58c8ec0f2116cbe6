import type { ReplayCache } from './replay-cache.js';

export const WEBHOOK_SCHEMES = ['hmac-sha256', 'github', 'stripe', 'slack', 'standard-webhooks', 'api-key'] as const;
export type WebhookScheme = (typeof WEBHOOK_SCHEMES)[number];

export interface WebhookRequest {
  /** The body exactly as received: signatures cover these bytes, never a re-serialised object. */
  readonly rawBody: Buffer;
  /** Header names lowercased, as node:http delivers them. */
  readonly headers: Readonly<Record<string, string>>;
}

/** From the extension's configuration: `webhook.secret` and `webhook.header`. */
export interface VerifierSettings {
  readonly secret: string;
  /** Required by `hmac-sha256` and `api-key`; ignored by the schemes whose headers are fixed. */
  readonly header?: string;
}

/**
 * Where repeated Standard Webhooks ids are remembered. `scope` keeps one
 * extension's ids apart from another's: pass the extension key.
 */
export interface ReplayScope {
  readonly cache: ReplayCache;
  readonly scope: string;
}

export interface VerifyContext {
  /** Milliseconds since the epoch; injected so tests never depend on the wall clock. */
  readonly now: () => number;
  /** Required rather than optional so that no caller can forget replay protection. */
  readonly replay: ReplayScope;
}

export interface VerifyResult {
  readonly accepted: true;
  /** A Standard Webhooks id already accepted recently: answer 200 and do nothing. */
  readonly duplicate: boolean;
}

/** Throws WebhookRejectedError (→ 401) or WebhookConfigError (→ 500); never returns a refusal. */
export type Verifier = (request: WebhookRequest, settings: VerifierSettings, context: VerifyContext) => VerifyResult;
