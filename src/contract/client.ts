import type * as v from 'valibot';
import type { Endpoints, HttpMethod, OperationId } from './endpoints.js';
import type { ErrorMeta } from './resources.js';

/**
 * The one typed client of the API, over the endpoint table: an operation's
 * params, query and body are checked by the compiler, and its `data` and
 * `meta` come typed. The CLI and the console each wrap it with their own
 * transport (the CLI's token and timeout, the browser's session cookie).
 * At run time it needs only each operation's method and path (`Routes`): the
 * console bundles those alone, not the table's schemas. Node-free.
 */

type Declared<O extends OperationId, K extends string> = Endpoints[O] extends { readonly [P in K]: infer S extends v.GenericSchema } ? S : undefined;

/** Query parameters as a client gives them: what the query string carries, integers also as numbers. */
type QueryInput<S extends v.GenericSchema> = {
  [K in keyof v.InferInput<S>]: K extends keyof v.InferOutput<S> ? (v.InferOutput<S>[K] extends number | undefined ? v.InferInput<S>[K] | number : v.InferInput<S>[K]) : never;
};

type OperationInput<O extends OperationId> = (Declared<O, 'params'> extends v.GenericSchema ? { params: v.InferInput<Declared<O, 'params'>> } : { params?: never }) &
  (Declared<O, 'query'> extends v.GenericSchema ? { query?: QueryInput<Declared<O, 'query'>> } : { query?: never }) &
  (Declared<O, 'body'> extends v.GenericSchema ? { body: v.InferInput<Declared<O, 'body'>> } : { body?: never }) &
  (Declared<O, 'headers'> extends v.GenericSchema ? { headers?: v.InferInput<Declared<O, 'headers'>> } : { headers?: never });

/** The input of an operation; optional when it takes nothing required. */
export type CallArgs<O extends OperationId> = Record<string, never> extends OperationInput<O> ? [input?: OperationInput<O>] : [input: OperationInput<O>];

type Answered<O extends OperationId, K extends 'data' | 'meta'> = Declared<O, K> extends v.GenericSchema ? v.InferOutput<Declared<O, K>> : null;

export interface Answer<O extends OperationId> {
  data: Answered<O, 'data'>;
  meta: Answered<O, 'meta'>;
  status: number;
  headers: Headers;
}

/** The operations answered with the envelope; the others (streams, archives, metrics, the document) are fetched by URL. */
export type EnvelopeOperationId = { [O in OperationId]: Endpoints[O] extends { readonly answers: object } ? never : O }[OperationId];

/** The daemon answered with an error envelope. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
    readonly meta: ErrorMeta | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** The answer was not the envelope: whatever answered is not a platform daemon. */
export class NotAnEnvelopeError extends Error {
  constructor(readonly status: number) {
    super(`answered ${status} without the platform envelope`);
    this.name = 'NotAnEnvelopeError';
  }
}

export interface HttpRequest {
  method: HttpMethod;
  /** The path with its parameters and query string. */
  url: string;
  body?: unknown;
  /** The request headers the operation declares, those given (`Idempotency-Key`). */
  headers?: Readonly<Record<string, string>>;
}

export interface HttpAnswer {
  status: number;
  headers: Headers;
  /** The body as parsed JSON, or undefined when it is not JSON. */
  body: unknown;
}

/** Sends a request as JSON and reads the answer; throws only when no answer came. */
export type Transport = (request: HttpRequest) => Promise<HttpAnswer>;

/** What the client needs of each operation at run time. */
export interface Route {
  readonly method: HttpMethod;
  readonly path: string;
}
export type Routes = { readonly [O in OperationId]: Route };

/** The path of an operation with its parameters, each segment encoded: a key or id can never change a path's shape. */
function pathOf(path: string, params: Record<string, string> = {}): string {
  return path.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`${path}: no value for :${name}`);
    return encodeURIComponent(value);
  });
}

/** The path and query string of a route; query values that are undefined are left out. */
function urlWith(route: Route, input: unknown): string {
  const given = input as { params?: Record<string, string>; query?: Record<string, string | number | boolean | undefined> } | undefined;
  const path = pathOf(route.path, given?.params);
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(given?.query ?? {})) if (value !== undefined) query.set(name, String(value));
  const search = query.toString();
  return search === '' ? path : `${path}?${search}`;
}

/** The declared headers given a value; undefined when there are none. */
function headersOf(input: unknown): Record<string, string> | undefined {
  const given = (input as { headers?: Record<string, string | undefined> } | undefined)?.headers ?? {};
  const headers = Object.fromEntries(Object.entries(given).filter((entry): entry is [string, string] => entry[1] !== undefined));
  return Object.keys(headers).length === 0 ? undefined : headers;
}

const isEnvelope = (body: unknown): body is { code: string; message: string | null; data: unknown; meta: Record<string, unknown> | null } =>
  typeof body === 'object' && body !== null && typeof (body as { code?: unknown }).code === 'string';

export interface ApiClient {
  /** Calls an operation: its `data` and `meta` on success, else throws ApiError (or NotAnEnvelopeError). */
  call<O extends EnvelopeOperationId>(operationId: O, ...input: CallArgs<O>): Promise<Answer<O>>;
  /** The path and query string of an operation (for what is not fetched as the envelope: streams, archives). */
  urlOf<O extends OperationId>(operationId: O, ...input: CallArgs<O>): string;
}

export function createApiClient(routes: Routes, transport: Transport): ApiClient {
  return {
    async call(operationId, ...args) {
      const route = routes[operationId];
      const body = (args[0] as { body?: unknown } | undefined)?.body;
      const headers = headersOf(args[0]);
      const answer = await transport({ method: route.method, url: urlWith(route, args[0]), body, ...(headers ? { headers } : {}) });
      if (answer.status === 204) return { data: null, meta: null, status: 204, headers: answer.headers } as never;
      if (!isEnvelope(answer.body)) throw new NotAnEnvelopeError(answer.status);
      const envelope = answer.body;
      if (envelope.code !== 'SUCCESS') throw new ApiError(envelope.message ?? envelope.code, envelope.code, answer.status, envelope.meta as ErrorMeta | null);
      return { data: envelope.data, meta: envelope.meta, status: answer.status, headers: answer.headers } as never;
    },
    urlOf: (operationId, ...args) => urlWith(routes[operationId], args[0]),
  };
}
