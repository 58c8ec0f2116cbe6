import { ofetch } from 'ofetch';
import routes from 'virtual:api-routes';
import { ApiError, createApiClient, NotAnEnvelopeError, type Answer, type CallArgs, type EnvelopeOperationId } from '../contract/client';

export { ApiError };

/**
 * The contract's typed client over the browser's fetch: same ofetch as the
 * CLI, but the session is the HttpOnly cookie, which the browser sends.
 * `routes` is each operation's method and path, taken from the endpoint
 * table when the console is built (vite.config.ts): the table's schemas stay
 * out of the bundle.
 */
const client = createApiClient(routes, async ({ method, url, body, headers }) => {
  try {
    const response = await ofetch.raw(url, { method, body: body as never, headers, credentials: 'same-origin', retry: 0, ignoreResponseError: true });
    return { status: response.status, headers: response.headers, body: response._data as unknown };
  } catch {
    throw new ApiError('The daemon cannot be reached. Is `platform serve` running?', 'UNREACHABLE', 0);
  }
});

let onSessionEnded: () => void = () => {};
/** Called when the daemon answers 401 UNAUTHORIZED: the session expired or was revoked. */
export const whenSessionEnds = (callback: () => void) => (onSessionEnded = callback);

/**
 * The console's one way to the API: an operation of the endpoint table, its
 * input and answer typed from it. Throws ApiError: the daemon's error, or
 * UNREACHABLE (status 0), or INTERNAL_ERROR for an answer without the envelope.
 */
export async function call<O extends EnvelopeOperationId>(operationId: O, ...input: CallArgs<O>): Promise<Answer<O>> {
  try {
    return await client.call(operationId, ...(withoutEmptyFilters(input) as CallArgs<O>));
  } catch (error) {
    if (error instanceof NotAnEnvelopeError) throw new ApiError(`The daemon answered ${error.status} without an envelope.`, 'INTERNAL_ERROR', error.status);
    if (error instanceof ApiError && error.code === 'UNAUTHORIZED') onSessionEnded();
    throw error;
  }
}

/** The URL of an operation that is not fetched as the envelope (a stream, the webhook endpoint). */
export const urlOf = client.urlOf;

/** A form's filter left empty means no filter: it is not sent. */
function withoutEmptyFilters(input: unknown[]): unknown[] {
  const given = input[0] as { query?: Record<string, unknown> } | undefined;
  if (!given?.query) return input;
  return [{ ...given, query: Object.fromEntries(Object.entries(given.query).filter(([, value]) => value !== '')) }];
}

/** An error as the console shows it; a VALIDATION_ERROR's `meta.issues` are appended: `message: path message; ...`. */
export function messageOf(error: unknown): string {
  if (!(error instanceof ApiError)) return 'Something went wrong in the console; reload the page.';
  const issues = error.meta?.issues;
  if (!Array.isArray(issues) || issues.length === 0) return error.message;
  const details = issues.map((issue) => [issue.path, issue.message].filter(Boolean).join(' '));
  return `${error.message}: ${details.join('; ')}`;
}
