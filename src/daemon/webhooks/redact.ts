/** What the request log shows instead of a signature or key header's value. */
export const MASKED_HEADER = '****';

/** The body excerpt: at most this many bytes of the body, cut back to a whole UTF-8 character. */
export const BODY_EXCERPT_BYTES = 2048;

/** Header names and values kept per call, in the order received; a value cut to fit ends with '…'. */
export const HEADER_BUDGET_CHARS = 2048;

/** The fixed signature headers of the schemes, and credentials any caller may send. */
const SECRET_HEADERS = new Set([
  'x-hub-signature',
  'x-hub-signature-256',
  'stripe-signature',
  'x-slack-signature',
  'webhook-signature',
  'svix-signature',
  'authorization',
  'proxy-authorization',
  'cookie',
]);

/** Headers a plugin or provider may carry a credential in, by their name. */
const SECRET_NAME = /signature|secret|token|key|auth|password|cookie/;

/**
 * Headers as the request log keeps them: every header that may carry a
 * signature or a key (the fixed ones, the configured `webhook.header`, and any
 * whose name suggests a credential) becomes `****`; the rest are cut to
 * HEADER_BUDGET_CHARS in all, so that a caller cannot make an entry large.
 */
export function maskHeaders(headers: Readonly<Record<string, string>>, configuredHeader: string | undefined): Record<string, string> {
  const configured = configuredHeader?.trim().toLowerCase();
  const kept: Record<string, string> = {};
  let budget = HEADER_BUDGET_CHARS;
  for (const [name, value] of Object.entries(headers)) {
    if (budget <= name.length) break;
    const secret = SECRET_HEADERS.has(name) || name === configured || SECRET_NAME.test(name);
    const shown = secret ? MASKED_HEADER : value;
    const room = budget - name.length;
    kept[name] = shown.length <= room ? shown : `${shown.slice(0, room)}…`;
    budget = room - Math.min(shown.length, room);
  }
  return kept;
}

const lenient = new TextDecoder('utf-8');

/** The first BODY_EXCERPT_BYTES of the body as text, never ending in half a character; bytes that are not UTF-8 show as U+FFFD. */
export function bodyExcerpt(rawBody: Buffer | undefined): string {
  if (!rawBody || rawBody.length === 0) return '';
  let end = Math.min(rawBody.length, BODY_EXCERPT_BYTES);
  // A continuation byte (10xxxxxx) at the cut means a character spans it: cut before that character.
  if (end < rawBody.length) while (end > 0 && (rawBody[end]! & 0xc0) === 0x80) end -= 1;
  return lenient.decode(rawBody.subarray(0, end));
}
