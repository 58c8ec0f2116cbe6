export const WEBHOOK_SCHEMES = ['hmac-sha256', 'github', 'stripe', 'slack', 'standard-webhooks', 'api-key'] as const;
export type WebhookScheme = (typeof WEBHOOK_SCHEMES)[number];

export interface WebhookRequest {
  /** The body exactly as received: signatures cover these bytes, never a re-serialised object. */
  readonly rawBody: Buffer;
  /** The same body parsed (a JSON object): read for the provider's event id and type, never for authentication. */
  readonly body: Readonly<Record<string, unknown>>;
  /** Header names lowercased, as node:http delivers them. */
  readonly headers: Readonly<Record<string, string>>;
}

/** From the extension's configuration: `webhook.secret` and `webhook.header`. */
export interface VerifierSettings {
  readonly secret: string;
  /** Required by `hmac-sha256` and `api-key`; ignored by the schemes whose headers are fixed. */
  readonly header?: string;
}

export interface VerifyContext {
  /** Milliseconds since the epoch; injected so tests never depend on the wall clock. */
  readonly now: () => number;
}

/** What an authenticated call says about itself, as far as its scheme defines it. */
export interface VerifiedCall {
  /** The provider's own delivery id, the same on its retries; null for schemes without one (hmac-sha256, api-key). */
  readonly sourceId: string | null;
  /** The provider's event type, as sent; null when the call names none. */
  readonly eventType: string | null;
  /** Set for Slack's url_verification handshake: answer with this text and publish nothing. */
  readonly challenge: string | null;
  /**
   * Set by the schemes that sign a timestamp (stripe, slack) for a call without
   * a delivery id: the SHA-256 of its timestamp and raw body. The replay check
   * uses it in place of the id, so the same signed call replayed within the
   * tolerance window publishes once.
   */
  readonly fingerprint?: string;
}

/** Throws WebhookRejectedError (→ 401) or WebhookConfigError (→ 500); never returns a refusal. */
export type Verifier = (request: WebhookRequest, settings: VerifierSettings, context: VerifyContext) => VerifiedCall;
