import { ofetch } from 'ofetch';
import type { Envelope } from '../contract/types';

/** The daemon answered with an error envelope (or could not be reached: status 0). */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | undefined>;
type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

let onSessionEnded: () => void = () => {};
/** Called when the daemon answers 401 UNAUTHORIZED: the session expired or was revoked. */
export const whenSessionEnds = (callback: () => void) => (onSessionEnded = callback);

/** `message: path message; ...` from a VALIDATION_ERROR's `meta.issues`. */
function describe(envelope: Envelope<unknown>): string {
  const issues = envelope.meta?.issues;
  const message = envelope.message ?? envelope.code;
  if (!Array.isArray(issues) || issues.length === 0) return message;
  const details = issues.map((issue: { path?: string; message?: string }) => [issue.path, issue.message].filter(Boolean).join(' '));
  return `${message}: ${details.join('; ')}`;
}

/**
 * The console's one way to the API, like the CLI's client: same ofetch, same
 * envelope, but the session is the HttpOnly cookie, which the browser sends.
 */
export async function request<T>(method: Method, path: string, options: { body?: unknown; query?: Query } = {}) {
  const query = Object.fromEntries(Object.entries(options.query ?? {}).filter(([, value]) => value !== undefined && value !== ''));
  let response;
  try {
    response = await ofetch.raw<Envelope<T>>(path, {
      method,
      query,
      body: options.body as Record<string, unknown> | undefined,
      credentials: 'same-origin',
      retry: 0,
      ignoreResponseError: true,
    });
  } catch {
    throw new ApiError('The daemon cannot be reached. Is `platform serve` running?', 'UNREACHABLE', 0);
  }
  if (response.status === 204) return { data: null as T, meta: null };
  const envelope = response._data;
  if (!envelope || typeof envelope.code !== 'string') {
    throw new ApiError(`The daemon answered ${response.status} without an envelope.`, 'INTERNAL_ERROR', response.status);
  }
  if (envelope.code !== 'SUCCESS') {
    if (envelope.code === 'UNAUTHORIZED') onSessionEnded();
    throw new ApiError(describe(envelope), envelope.code, response.status);
  }
  return { data: envelope.data, meta: envelope.meta };
}

const dataOf = async <T>(answer: Promise<{ data: T }>) => (await answer).data;

export const api = {
  get: <T>(path: string, query?: Query) => dataOf(request<T>('GET', path, { query })),
  post: <T>(path: string, body?: unknown) => dataOf(request<T>('POST', path, { body })),
  put: <T>(path: string, body?: unknown) => dataOf(request<T>('PUT', path, { body })),
  patch: <T>(path: string, body?: unknown) => dataOf(request<T>('PATCH', path, { body })),
  delete: (path: string, query?: Query) => dataOf(request<null>('DELETE', path, { query })),
};

export const messageOf = (error: unknown) =>
  error instanceof ApiError ? error.message : 'Something went wrong in the console; reload the page.';
