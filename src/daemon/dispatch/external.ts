import { ofetch } from 'ofetch';
import type { PlatformEvent } from '../../handlers/sdk.js';
import { standardWebhooksDigest } from '../../handlers/webhooks/standard-webhooks.js';
import { isRetryableStatus, parseRetryAfter } from './retry.js';
import type { DeliveryError } from './types.js';

export type AttemptOutcome =
  | { ok: true }
  | { ok: false; retryable: boolean; error: DeliveryError; retryAfterMs?: number | null }
  /** The daemon is stopping: the attempt did not happen and is not counted. */
  | { ok: false; aborted: true };

export interface ExternalDelivery {
  deliveryId: string;
  event: PlatformEvent;
  serviceBaseUrl: string;
  signingKey: Buffer;
}

const bodies = new WeakMap<PlatformEvent, string>();

/** The JSON body a subscriber receives: the PlatformEvent plus workspaceId; built once per event. */
export function deliveryBody(event: PlatformEvent): string {
  let body = bodies.get(event);
  if (body === undefined) {
    body = JSON.stringify({ ...event, workspaceId: event.tenantId });
    bodies.set(event, body);
  }
  return body;
}

/** Standard Webhooks: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<body>")>, with the key already decoded. */
function signature(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  return `v1,${standardWebhooksDigest(key, id, String(timestampSeconds), body).toString('base64')}`;
}

export const eventsUrl = (serviceBaseUrl: string) => `${serviceBaseUrl.replace(/\/+$/, '')}/events`;

/**
 * One POST to {serviceBaseUrl}/events. No redirects followed, no retries here
 * (the dispatcher owns them), a timeout, and the answer's body is never read
 * beyond what is needed: a subscriber cannot make us buffer megabytes.
 */
export async function postEvent(
  delivery: ExternalDelivery,
  options: { timeoutMs: number; stopSignal: AbortSignal; now: number },
): Promise<AttemptOutcome> {
  const body = deliveryBody(delivery.event);
  const timestamp = Math.floor(options.now / 1000);
  const timeout = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await ofetch.raw(eventsUrl(delivery.serviceBaseUrl), {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': delivery.deliveryId,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature(delivery.signingKey, delivery.deliveryId, timestamp, body),
      },
      // ofetch's own timeout is ignored when a signal is given: combine both here.
      signal: AbortSignal.any([options.stopSignal, timeout]),
      retry: 0,
      redirect: 'manual',
      responseType: 'stream',
      ignoreResponseError: true,
    });
    await (response._data as ReadableStream | undefined)?.cancel().catch(() => undefined);
    const status = response.status;
    if (status >= 200 && status < 300) return { ok: true };
    return {
      ok: false,
      retryable: isRetryableStatus(status),
      error: { message: `subscriber answered HTTP ${status}`, status },
      retryAfterMs: status === 429 || status === 503 ? parseRetryAfter(response.headers.get('retry-after'), options.now) : null,
    };
  } catch (error) {
    if (options.stopSignal.aborted) return { ok: false, aborted: true };
    if (timeout.aborted) {
      return { ok: false, retryable: true, error: { message: `no answer within ${options.timeoutMs} ms`, status: null } };
    }
    return { ok: false, retryable: true, error: { message: `network error: ${networkReason(error)}`, status: null } };
  }
}

function networkReason(error: unknown): string {
  type Cause = { code?: string; message?: string; cause?: Cause };
  let cause = error as Cause | undefined;
  while (cause?.cause) cause = cause.cause;
  return cause?.code ?? cause?.message ?? 'request failed';
}
