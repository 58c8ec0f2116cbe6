import * as v from 'valibot';
import { DomainError } from '../errors.js';
import { parseOrThrow } from '../validation.js';
import { Payload, type PublishEventBody } from '../../contract/requests.js';

/**
 * The checks every event payload passes, published or arriving through an
 * inbound webhook: a JSON object nested at most MAX_PAYLOAD_DEPTH levels (400),
 * then at most maxBytes of JSON (413). Depth comes first: serialising a deeper
 * value would exhaust the stack.
 */
export function checkPayload(payload: unknown, maxBytes: number): Record<string, unknown> {
  const checked = parseOrThrow(Payload, payload, 'payload');
  const bytes = Buffer.byteLength(JSON.stringify(checked));
  if (bytes > maxBytes) {
    throw new DomainError('PAYLOAD_TOO_LARGE', `the event payload is ${bytes} bytes of JSON; the limit is ${maxBytes}`, {
      limit: maxBytes,
    });
  }
  return checked;
}

export type PublishEventInput = v.InferOutput<typeof PublishEventBody>;
