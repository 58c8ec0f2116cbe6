import { standardWebhooksDigest } from '../../handlers/webhooks/standard-webhooks.js';
import { PLATFORM_VERSION } from '../version.js';
import { isRetryableStatus, parseRetryAfter } from './retry.js';
import type { DeliveryTransport } from './transport.js';
import type { CarriedEvent, DeliveryAttempt, DeliveryError } from './types.js';
import { maskCredentials } from './url-credentials.js';

/**
 * For the delivery record: the request sent (once its headers went out) and
 * what the subscriber answered (its status, headers and the start of its body).
 */
export interface Answered {
  request?: NonNullable<DeliveryAttempt['request']>;
  httpStatus?: number;
  responseHeaders?: Record<string, string>;
  responseExcerpt?: string;
}

/** Sent with every delivery: subscribers can tell the platform's requests, and its version, from others. */
const USER_AGENT = `platform/${PLATFORM_VERSION}`;

export type AttemptOutcome =
  | ({ ok: true } & Answered)
  | ({ ok: false; retryable: boolean; error: DeliveryError; retryAfterMs?: number | null } & Answered)
  /** The daemon is stopping, or lost the delivery's lease: the attempt did not happen and is not counted. */
  | { ok: false; aborted: true };

export interface ExternalDelivery {
  deliveryId: string;
  event: CarriedEvent;
  /** Where to POST: the subscription's URL with its delivery path (deliveryUrlOf), credentials included. */
  url: string;
  /** The current key first; during a rotation's overlap the previous one too: one signature each. */
  signingKeys: readonly Buffer[];
}

/** Standard Webhooks: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>, with the key already decoded. */
function signature(key: Buffer, id: string, timestampSeconds: number, body: Buffer): string {
  return `v1,${standardWebhooksDigest(key, id, String(timestampSeconds), body).toString('base64')}`;
}

/**
 * One POST to the subscriber's delivery URL. No redirects followed, no retries here
 * (the dispatcher owns them), a timeout, and the answer's body is never read
 * beyond a small cap (see transport.ts). The body is read and signed once
 * the connection is up.
 */
export async function postEvent(
  delivery: ExternalDelivery,
  options: { transport: DeliveryTransport; timeoutMs: number; isStopping: () => boolean; now: number },
): Promise<AttemptOutcome> {
  const timestamp = Math.floor(options.now / 1000);
  // Set once the request's headers went out: a failure after that (a timeout, a reset connection) still records what was sent.
  let sent: Answered = {};
  try {
    const answer = await options.transport.post(delivery.url, {
      deliveryId: delivery.deliveryId,
      // The transport sends webhook-id, the delivery id.
      headers: {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        'webhook-timestamp': String(timestamp),
      },
      body: async () => {
        const bytes = await delivery.event.body();
        const signatures = delivery.signingKeys.map((key) => signature(key, delivery.deliveryId, timestamp, bytes));
        return { bytes, headers: { 'webhook-signature': signatures.join(' ') } };
      },
      sent: (headers) => (sent = { request: { url: maskCredentials(delivery.url), headers } }),
    });
    const { status } = answer;
    const answered: Answered = {
      ...sent,
      httpStatus: status,
      responseHeaders: answer.headers,
      ...(answer.excerpt === null ? {} : { responseExcerpt: answer.excerpt }),
    };
    if (status >= 200 && status < 300) return { ok: true, ...answered };
    return {
      ...answered,
      ok: false,
      retryable: isRetryableStatus(status),
      error: { message: `subscriber answered HTTP ${status}`, status },
      retryAfterMs: status === 429 || status === 503 ? parseRetryAfter(answer.retryAfter, options.now) : null,
    };
  } catch (error) {
    const chain = causes(error);
    if (options.isStopping() || chain.some((cause) => cause.name === 'LeaseLostError')) return { ok: false, aborted: true };
    const unreadable = chain.find((cause) => cause.name === 'PayloadUnreadable');
    if (unreadable) return { ok: false, retryable: true, error: { message: unreadable.message ?? 'the payload could not be read', status: null } };
    const refused = chain.find((cause) => cause.code === 'EPRIVATETARGET');
    if (refused) return { ok: false, retryable: false, error: { message: refused.message ?? 'private target', status: null } };
    if (chain.some((cause) => cause.name === 'TimeoutError')) {
      return { ...sent, ok: false, retryable: true, error: { message: `no answer within ${options.timeoutMs} ms`, status: null } };
    }
    return { ...sent, ok: false, retryable: true, error: { message: `network error: ${networkReason(error)}`, status: null } };
  }
}

type Cause = { name?: string; code?: string; message?: string; cause?: unknown };

function causes(error: unknown): Cause[] {
  const chain: Cause[] = [];
  for (let cause = error as Cause | undefined; cause && chain.length < 8; cause = cause.cause as Cause | undefined) chain.push(cause);
  return chain;
}

function networkReason(error: unknown): string {
  const innermost = causes(error).at(-1);
  return innermost?.code ?? innermost?.message ?? 'request failed';
}
