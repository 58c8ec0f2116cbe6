import type { Command } from 'commander';
import { ofetch, type FetchOptions } from 'ofetch';
import type { Envelope } from '../contract/types.js';
import { ApiError, CliError, EXIT } from './errors.js';
import { resolveToken, resolveUrl } from './session.js';

/** `data` and `meta` of a success envelope, typed by the caller from the contract (src/contract/types.ts). */
export interface ApiResponse<T, M = Record<string, unknown> | null> {
  data: T;
  meta: M;
  headers: Headers;
}

type Query = Record<string, string | number | boolean | undefined>;

export interface Client {
  readonly url: string;
  request<T = unknown, M = Record<string, unknown> | null>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    path: string,
    options?: { body?: unknown; query?: Query },
  ): Promise<ApiResponse<T, M>>;
  get<T = unknown>(path: string, query?: Query): Promise<T>;
  post<T = unknown>(path: string, body?: unknown): Promise<T>;
  put<T = unknown>(path: string, body?: unknown): Promise<T>;
  patch<T = unknown>(path: string, body?: unknown): Promise<T>;
  delete<T = unknown>(path: string, query?: Query): Promise<T>;
}

/**
 * The CLI's one way to talk to the daemon: base URL and token resolved once,
 * the envelope unwrapped, errors turned into messages and exit codes.
 */
export function createClient(options: { url?: string; token?: string | null; timeoutSeconds?: number } = {}): Client {
  const url = options.url ?? resolveUrl(undefined);
  const token = options.token === undefined ? resolveToken(url) : options.token;
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;

  async function request<T>(method: string, path: string, { body, query }: { body?: unknown; query?: Query } = {}) {
    const fetchOptions: FetchOptions<'json'> = {
      method,
      baseURL: url,
      query,
      body: body as FetchOptions['body'],
      headers: token ? { authorization: `Bearer ${token}` } : {},
      retry: 0,
      timeout: timeoutSeconds * 1000,
      ignoreResponseError: true,
    };
    let response;
    try {
      response = await ofetch.raw<Envelope<T>>(path, fetchOptions);
    } catch (error) {
      // ofetch wraps fetch's TypeError, which wraps the socket error that names the cause.
      type Cause = { name?: string; code?: string; message?: string; cause?: Cause };
      const outer = (error as { cause?: Cause }).cause;
      if (outer?.name === 'TimeoutError') {
        throw new CliError(`no answer from ${url} in ${timeoutSeconds} s (see --timeout)`, EXIT.unreachable);
      }
      const reason = outer?.cause?.code ?? outer?.code ?? outer?.message ?? (error as Error).message;
      throw new CliError(`cannot reach the platform daemon at ${url} (${reason}); is \`platform serve\` running?`, EXIT.unreachable);
    }
    const envelope = response._data;
    if (response.status === 204) return { data: null as T, meta: null, headers: response.headers };
    if (!envelope || typeof envelope !== 'object' || typeof envelope.code !== 'string') {
      throw new CliError(`${url} answered ${response.status} without a platform envelope; is it a platform daemon?`, EXIT.daemonError);
    }
    if (envelope.code !== 'SUCCESS') {
      throw new ApiError(envelope.message ?? envelope.code, envelope.code, response.status, envelope.meta);
    }
    return { data: envelope.data, meta: envelope.meta, headers: response.headers };
  }

  const dataOf = async <T>(promise: Promise<ApiResponse<T>>) => (await promise).data;
  return {
    url,
    request: request as Client['request'],
    get: (path, query) => dataOf(request('GET', path, { query })),
    post: (path, body) => dataOf(request('POST', path, { body })),
    put: (path, body) => dataOf(request('PUT', path, { body })),
    patch: (path, body) => dataOf(request('PATCH', path, { body })),
    delete: (path, query) => dataOf(request('DELETE', path, { query })),
  };
}

export const DEFAULT_TIMEOUT_SECONDS = 30;

/** The client for a command: the global --url and --timeout, or the usual resolution; `token: null` for none. */
export const clientFor = (command: Command, options: { token?: null } = {}): Client => {
  const globals = command.optsWithGlobals<{ url?: string; timeout?: number }>();
  return createClient({ url: resolveUrl(globals.url), timeoutSeconds: globals.timeout, ...options });
};
