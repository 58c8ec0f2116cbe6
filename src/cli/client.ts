import type { Command } from 'commander';
import { setFlagsFromString } from 'node:v8';
import type { FetchOptions } from 'ofetch';
import { createApiClient, NotAnEnvelopeError, type ApiClient, type CallArgs } from '../contract/client.js';
import { endpoints, type OperationId } from '../contract/endpoints.js';
import { CliError, EXIT } from './errors.js';
import { resolveToken, resolveUrl } from './session.js';

/** The typed client of the contract (`call`), with what the few answers that are not the envelope (streams, archives, the document) need to be fetched. */
export interface Client extends ApiClient {
  readonly url: string;
  readonly token: string | null;
  readonly timeoutSeconds: number;
  /** The full URL of an operation. */
  readonly href: <O extends OperationId>(operationId: O, ...input: CallArgs<O>) => string;
}

export const DEFAULT_TIMEOUT_SECONDS = 30;

let fetchLoaded: Promise<typeof import('ofetch').ofetch> | undefined;

/**
 * ofetch, imported at the first request: it reads globalThis.fetch as it loads, which makes Node
 * load its fetch engine (about 80 ms), a cost `--help`, completion and usage errors need not pay.
 * That engine parses HTTP in WebAssembly, compiled at the first request by V8's quick compiler and
 * then again, optimised, in the background; a process does not exit before that second
 * compilation ends, some 60 ms after the answer. A command sends a few requests at most: V8 is
 * told to keep the quick code. (The CLI's process only: the daemon never comes here.)
 */
function loadFetch(): Promise<typeof import('ofetch').ofetch> {
  fetchLoaded ??= import('ofetch').then(({ ofetch }) => {
    setFlagsFromString('--liftoff-only');
    return ofetch;
  });
  return fetchLoaded;
}

/** The CLI's one way to talk to the daemon: base URL and token resolved once, errors turned into messages and exit codes. */
export function createClient(options: { url?: string; token?: string | null; timeoutSeconds?: number } = {}): Client {
  const url = options.url ?? resolveUrl(undefined);
  const token = options.token === undefined ? resolveToken(url) : options.token;
  const timeoutSeconds = options.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS;
  const api = createApiClient(endpoints, async ({ method, url: path, body, headers: declared }) => {
    const headers: Record<string, string> = { ...declared, ...(token ? { authorization: `Bearer ${token}` } : {}) };
    try {
      const options: FetchOptions<'json'> = { method, baseURL: url, body: body as FetchOptions['body'], headers, retry: 0, timeout: timeoutSeconds * 1000, ignoreResponseError: true };
      const ofetch = await loadFetch();
      const response = await ofetch.raw(path, options);
      return { status: response.status, headers: response.headers, body: response._data as unknown };
    } catch (error) {
      // ofetch wraps fetch's TypeError, which wraps the socket error that names the cause.
      type Cause = { name?: string; code?: string; message?: string; cause?: Cause };
      const outer = (error as { cause?: Cause }).cause;
      if (outer?.name === 'TimeoutError') throw new CliError(`no answer from ${url} in ${timeoutSeconds} s (see --timeout)`, EXIT.unreachable);
      const reason = outer?.cause?.code ?? outer?.code ?? outer?.message ?? (error as Error).message;
      throw new CliError(`cannot reach the platform daemon at ${url} (${reason}); is \`platform serve\` running?`, EXIT.unreachable);
    }
  });
  return {
    url,
    token,
    timeoutSeconds,
    urlOf: api.urlOf,
    href: (operationId, ...input) => url + api.urlOf(operationId, ...input),
    call: (operationId, ...input) =>
      api.call(operationId, ...input).catch((error: unknown) => {
        if (!(error instanceof NotAnEnvelopeError)) throw error;
        throw new CliError(`${url} answered ${error.status} without a platform envelope; is it a platform daemon?`, EXIT.daemonError);
      }),
  };
}

/** The client for a command: the global --url and --timeout, or the usual resolution; `token: null` for none. */
export const clientFor = (command: Command, options: { token?: null } = {}): Client => {
  const globals = command.optsWithGlobals<{ url?: string; timeout?: number }>();
  return createClient({ url: resolveUrl(globals.url), timeoutSeconds: globals.timeout, ...options });
};
