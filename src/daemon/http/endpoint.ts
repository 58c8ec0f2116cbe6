import type { IncomingMessage } from 'node:http';
import { defineEventHandler, getQuery, getRouterParams, type EventHandler, type H3Event } from 'h3';
import type * as v from 'valibot';
import { DomainError, forbidden, unauthorized } from '../errors.js';
import { parseOrThrow } from '../validation.js';
import type { AuthService, Caller } from '../auth/service.js';
import { isAdmin } from '../auth/users.js';
import { ClientGoneError, hasBody, isJsonContentType, readJsonBody } from './body.js';
import { isCrossSiteWrite, type CrossSitePolicy } from './cross-site.js';
import { sendDomainError, sendEnvelope, sendPage, sendSuccess, sendText } from './envelope.js';
import type { PageBudget } from '../paging.js';

export const SESSION_COOKIE = 'platform_token';

/**
 * The session cookie's name. Behind TLS (`--secure-cookies`) it is
 * `__Host-platform_token`: a browser keeps a `__Host-` cookie only when it is
 * Secure, has Path=/ and no Domain, so neither a sibling subdomain nor a
 * plain-http page can plant one (session fixation). Only this name is read.
 */
export const sessionCookieName = (secureCookies: boolean) => (secureCookies ? `__Host-${SESSION_COOKIE}` : SESSION_COOKIE);

/** Who may call: anyone, any logged-in user, or an ADMIN. */
export type Access = 'public' | 'user' | 'admin';

type Output<S> = S extends v.GenericSchema ? v.InferOutput<S> : undefined;

export interface EndpointContext<A extends Access, P, Q, B> {
  params: P;
  query: Q;
  body: B;
  caller: A extends 'public' ? null : Caller;
  /** The bytes of the body as received (empty without a body schema). */
  rawBody: Buffer;
  event: H3Event;
}

/** Returned by a handler that needs more than `data` in the envelope. */
export class Reply<T = unknown> {
  constructor(
    readonly data: T,
    readonly meta: Record<string, unknown> | null = null,
  ) {}
}

/** Returned by a handler for a page of a listing: the items, serialised within the page's byte budget, and `meta`. */
export class PageReply {
  constructor(
    readonly budget: PageBudget<never>,
    readonly meta: Record<string, unknown> | null,
  ) {}
}

/** Returned by a handler that must answer with plain text instead of the envelope (a provider's handshake). */
export class TextReply {
  constructor(readonly text: string) {}
}

export interface EndpointSpec<A extends Access, PS, QS, BS> {
  access: A;
  /** Runs after authentication and before validation: throw `forbidden` to refuse (403). */
  authorize?: (caller: Caller, rawParams: Record<string, string>) => void | Promise<void>;
  params?: PS;
  query?: QS;
  body?: BS;
  /** Success status: 200 unless given. 204 sends no body. */
  status?: 200 | 201 | 202 | 204;
  /** A smaller body limit than the daemon's `--max-body`, for routes whose bodies are always small. */
  maxBodyBytes?: number;
  /** The handler reads the raw body itself, whatever its content type (the webhook endpoint). */
  readsOwnBody?: true;
  /**
   * The success answer is not the envelope (a stream, a file, metrics, the API
   * document): the handler writes it itself, and this is what the API document
   * says it is. Errors it throws are still answered with the envelope.
   */
  answers?: { contentType: string; description: string };
  handle: (context: EndpointContext<A, Output<PS>, Output<QS>, Output<BS>>) => unknown;
}

export interface EndpointDeps {
  auth: AuthService;
  maxBodyBytes: number;
  crossSite: CrossSitePolicy;
  /** The session cookie's name (see sessionCookieName). */
  sessionCookie: string;
}

export type EndpointFactory = <
  A extends Access,
  PS extends v.GenericSchema | undefined = undefined,
  QS extends v.GenericSchema | undefined = undefined,
  BS extends v.GenericSchema | undefined = undefined,
>(
  spec: EndpointSpec<A, PS, QS, BS>,
) => EventHandler;

/** The token of a request: `Authorization: Bearer`, else the session cookie named `cookieName` (see sessionCookieName). */
export function bearerToken(req: IncomingMessage, cookieName: string): string | null {
  const header = req.headers.authorization;
  if (header && /^bearer /i.test(header)) return header.slice(7).trim() || null;
  const cookies = req.headers.cookie;
  if (!cookies) return null;
  for (const part of cookies.split(';')) {
    const index = part.indexOf('=');
    if (index > 0 && part.slice(0, index).trim() === cookieName) return part.slice(index + 1).trim() || null;
  }
  return null;
}

/**
 * Every route is one endpoint: it authenticates (401), authorizes (403),
 * validates params, query and body (400), then calls the domain (404, 409, …)
 * and shapes the envelope. The order is the contract's, for every route.
 */
export function createEndpointFactory(deps: EndpointDeps): EndpointFactory {
  return (spec) => {
    const handler = defineEventHandler(async (event) => {
      try {
        await serve(spec, deps, event);
      } catch (error) {
        // Answered here, not by h3's onError: h3 replaces a thrown error that
        // has a `cause` by that cause, which would turn a 503 into a 500.
        if (error instanceof DomainError) sendDomainError(event.node.res, error);
        // Nobody is left to answer; the access line counts the request as abandoned.
        else if (!(error instanceof ClientGoneError)) throw error;
      }
      // Tell h3 the response is complete.
      return null;
    });
    specs.set(handler, spec);
    return handler;
  };
}

/** What an endpoint's handler was built from, for the API document. */
export type AnyEndpointSpec = EndpointSpec<Access, v.GenericSchema | undefined, v.GenericSchema | undefined, v.GenericSchema | undefined>;

const specs = new WeakMap<EventHandler, AnyEndpointSpec>();

/** The spec an endpoint handler was built from; undefined for a handler not made by `endpoint()`. */
export const specOf = (handler: EventHandler): AnyEndpointSpec | undefined => specs.get(handler);

async function serve<
  A extends Access,
  PS extends v.GenericSchema | undefined,
  QS extends v.GenericSchema | undefined,
  BS extends v.GenericSchema | undefined,
>(
  spec: EndpointSpec<A, PS, QS, BS>,
  deps: EndpointDeps,
  event: H3Event,
): Promise<void> {
  const { req, res } = event.node;
  // First of all, so that no cross-site page can log a browser out, or into an account of its choosing.
  // The webhook endpoint is exempt: it never reads the session cookie, and other sites' servers call it.
  if (!(spec.access === 'public' && spec.readsOwnBody) && isCrossSiteWrite(req, deps.crossSite)) {
    throw forbidden('a cross-site request may not act with the session cookie: send Authorization: Bearer instead');
  }
  let caller: Caller | null = null;
  if (spec.access !== 'public') {
    const token = bearerToken(req, deps.sessionCookie);
    if (!token) throw unauthorized('authentication required: log in or send Authorization: Bearer <token>');
    caller = await deps.auth.authenticate(token);
    if (spec.access === 'admin' && !isAdmin(caller.user)) throw forbidden('this action requires the ADMIN role');
    await spec.authorize?.(caller, (event.context.params ?? {}) as Record<string, string>);
  }

  const params = spec.params ? parseOrThrow(spec.params, getRouterParams(event, { decode: true })) : undefined;
  const query = spec.query ? parseOrThrow(spec.query, getQuery(event)) : undefined;
  let body: unknown;
  let rawBody: Buffer = Buffer.alloc(0);
  if (spec.body) {
    const read = await readJsonBody(req, res, Math.min(spec.maxBodyBytes ?? Infinity, deps.maxBodyBytes));
    if (read.json === undefined) {
      throw new DomainError('VALIDATION_ERROR', 'a JSON object body is required', {
        issues: [{ path: '', message: 'a JSON object body is required' }],
      });
    }
    body = parseOrThrow(spec.body, read.json);
    rawBody = read.raw;
  } else if (!spec.readsOwnBody && hasBody(req) && !isJsonContentType(req.headers['content-type'])) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be sent as Content-Type: application/json, in UTF-8');
  }

  const result = await spec.handle({ params, query, body, caller, rawBody, event } as never);
  if (spec.answers) return;
  const status = spec.status ?? 200;
  if (status === 204) sendEnvelope(res, 204, { code: 'SUCCESS', message: null, data: null, meta: null });
  else if (result instanceof PageReply) await sendPage(res, result.budget.json, result.budget.bytes, result.meta);
  else if (result instanceof Reply) sendSuccess(res, status, result.data, result.meta);
  else if (result instanceof TextReply) sendText(res, status, result.text);
  else sendSuccess(res, status, result);
}
