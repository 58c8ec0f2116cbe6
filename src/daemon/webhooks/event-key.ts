import * as v from 'valibot';
import { EventKey } from '../../contract/schemas.js';

const TYPE_PLACEHOLDER = '{type}';
/** What `{type}` becomes for a call that names no usable type. */
const UNTYPED = 'webhook.received';

/** The event key's `{type}`: lower-cased, every character outside `[a-z0-9_.-]` turned into `-`. */
function normalizedType(eventType: string): string {
  return eventType.toLowerCase().replace(/[^a-z0-9_.-]/gu, '-');
}

/**
 * The event key of an accepted call: `webhook.eventKey` with `{type}`
 * replaced by the provider's event type. A type that would make the key
 * invalid (an empty segment such as `push.`, or over 255 characters) counts
 * as no type, so an authenticated call is never refused for what its
 * provider named it.
 */
export function webhookEventKey(template: string, eventType: string | null): string {
  if (eventType !== null) {
    const typed = template.replaceAll(TYPE_PLACEHOLDER, normalizedType(eventType));
    if (v.is(EventKey, typed)) return typed;
  }
  return template.replaceAll(TYPE_PLACEHOLDER, UNTYPED);
}

/** A `webhook.eventKey` is valid when it yields a valid key for a call without a type, the fallback of every call. */
export function isEventKeyTemplate(template: string): boolean {
  return v.is(EventKey, template.replaceAll(TYPE_PLACEHOLDER, UNTYPED));
}
