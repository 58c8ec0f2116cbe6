import type { IncomingMessage } from 'node:http';
import { defineEventHandler, getQuery, getRouterParams, type EventHandler, type H3Event } from 'h3';
import type { EndpointDeclaration, Endpoints, OperationId } from '../../contract/endpoints.js';
import type * as v from 'valibot';
import { DomainError, forbidden, unauthorized } from '../errors.js';
import { parseOrThrow } from '../validation.js';
import type { AuthService, Caller } from '../auth/service.js';
import type { StoredApiToken } from '../auth/api-tokens.js';
import { INSTALLATION_TOKEN_PREFIX, type ExtensionCaller } from '../workspaces/installations.js';
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

type Output<D, K extends string> = D extends { readonly [P in K]: infer S extends v.GenericSchema } ? v.InferOutput<S> : undefined;

/** Who called: nobody in particular, a user (with a session or an API token), or an extension's service (with its installation token). */
type CallerOf<D extends EndpointDeclaration> = D['access'] extends 'public' | 'scraper'
  ? null
  : D['access'] extends 'installation'
    ? ExtensionCaller
    : D extends { readonly forInstallations: true }
      ? Caller | ExtensionCaller
      : Caller;

export interface HandlerContext<D extends EndpointDeclaration> {
  params: Output<D, 'params'>;
  query: Output<D, 'query'>;
  body: Output<D, 'body'>;
  /** The declared request headers, validated, by their declared names. */
  headers: Output<D, 'headers'>;
  caller: CallerOf<D>;
  /** The bytes of the body as received (empty without a body schema). */
  rawBody: Buffer;
  event: H3Event;
}

/**
 * What a route module supplies for an operation of the endpoint table: the
 * call into the domain, after authentication, authorization and validation.
 * It returns `data`, a Reply, a PageReply or a TextReply; an operation that
 * `answers` with something other than the envelope writes it itself.
 */
export type Handler<O extends OperationId> = (context: HandlerContext<Endpoints[O]>) => unknown;
export type Handlers = { [O in OperationId]: Handler<O> };

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

export interface EndpointDeps {
  auth: AuthService;
  /** The extension an installation token belongs to, or 401. */
  authenticateInstallation: (token: string) => Promise<ExtensionCaller>;
  /** 403 unless the caller is an ADMIN or a member of the workspace. */
  assertMember: (caller: Caller, workspaceId: string) => Promise<void>;
  maxBodyBytes: number;
  crossSite: CrossSitePolicy;
  /** The session cookie's name (see sessionCookieName). */
  sessionCookie: string;
}

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
export function endpointHandler(declaration: EndpointDeclaration, handle: (context: never) => unknown, deps: EndpointDeps): EventHandler {
  return defineEventHandler(async (event) => {
    try {
      await serve(declaration, handle, deps, event);
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
}

/** The workspace a route acts on: the `:id` of a path under /api/workspaces or /api/admin/workspaces, else null. */
function workspaceOf(declaration: EndpointDeclaration, event: H3Event): string | null {
  const under = declaration.path.startsWith('/api/workspaces/:id') || declaration.path.startsWith('/api/admin/workspaces/:id');
  return under ? ((event.context.params ?? {}).id ?? '') : null;
}

/**
 * A personal API token acts as its user within its scopes and workspaces: a
 * route without a scope is for sessions only; a token limited to workspaces
 * calls the routes of those workspaces (and those any token may call).
 */
function assertTokenAllows(declaration: EndpointDeclaration, token: StoredApiToken, workspaceId: string | null): void {
  const required = declaration.scope;
  if (required === undefined) throw forbidden('an API token cannot do this: log in (a session) to do it');
  if (required !== 'any' && !token.scopes.includes(required)) {
    throw new DomainError('FORBIDDEN', `this API token lacks the ${required} scope`, { requiredScope: required });
  }
  if (token.workspaces === null || required === 'any') return;
  if (workspaceId === null || !token.workspaces.includes(workspaceId)) {
    throw forbidden(`this API token is limited to the workspaces ${token.workspaces.join(', ')}`);
  }
}

async function serve(declaration: EndpointDeclaration, handle: (context: never) => unknown, deps: EndpointDeps, event: H3Event): Promise<void> {
  const { req, res } = event.node;
  const { access } = declaration;
  // First of all, so that no cross-site page can log a browser out, or into an account of its choosing.
  // The webhook endpoint is exempt: it never reads the session cookie, and other sites' servers call it.
  if (!declaration.readsOwnBody && isCrossSiteWrite(req, deps.crossSite)) {
    throw forbidden('a cross-site request may not act with the session cookie: send Authorization: Bearer instead');
  }
  let caller: Caller | ExtensionCaller | null = null;
  if (access === 'user' || access === 'member' || access === 'admin' || access === 'installation') {
    const token = bearerToken(req, deps.sessionCookie);
    if (!token) throw unauthorized('authentication required: log in or send Authorization: Bearer <token>');
    if (token.startsWith(INSTALLATION_TOKEN_PREFIX)) {
      if (access !== 'installation' && !declaration.forInstallations) {
        throw forbidden('an installation token publishes its extension’s events, reads its installation and its own subscriptions’ deliveries; nothing else');
      }
      // Which workspace and which event keys it may use is the handler's to check, with the domain.
      caller = await deps.authenticateInstallation(token);
    } else {
      if (access === 'installation') throw unauthorized('this route is for an extension’s installation token (pli_…)');
      const user = await deps.auth.authenticate(token);
      if (user.apiToken) assertTokenAllows(declaration, user.apiToken, workspaceOf(declaration, event));
      if (access === 'admin' && !isAdmin(user.user)) throw forbidden('this action requires the ADMIN role');
      if (access === 'member') await deps.assertMember(user, (event.context.params ?? {}).id ?? '');
      caller = user;
    }
  }

  const params = declaration.params ? parseOrThrow(declaration.params, getRouterParams(event, { decode: true })) : undefined;
  // Most requests have no query string: they skip its parsing.
  const query = declaration.query ? parseOrThrow(declaration.query, req.url?.includes('?') ? getQuery(event) : {}) : undefined;
  const headers = declaration.headers ? parseOrThrow(declaration.headers, declaredHeaders(req, declaration.headers)) : undefined;
  let body: unknown;
  let rawBody: Buffer = Buffer.alloc(0);
  if (declaration.body) {
    const read = await readJsonBody(req, res, Math.min(declaration.maxBodyBytes ?? Infinity, deps.maxBodyBytes));
    if (read.json === undefined) {
      throw new DomainError('VALIDATION_ERROR', 'a JSON object body is required', {
        issues: [{ path: '', message: 'a JSON object body is required' }],
      });
    }
    body = parseOrThrow(declaration.body, read.json);
    rawBody = read.raw;
  } else if (!declaration.readsOwnBody && hasBody(req) && !isJsonContentType(req.headers['content-type'])) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be sent as Content-Type: application/json, in UTF-8');
  }

  const result = await handle({ params, query, body, headers, caller, rawBody, event } as never);
  if (declaration.answers) return;
  const status = declaration.status ?? 200;
  if (status === 204) sendEnvelope(res, 204, { code: 'SUCCESS', message: null, data: null, meta: null });
  else if (result instanceof PageReply) await sendPage(res, result.budget.json, result.budget.bytes, result.meta);
  else if (result instanceof Reply) sendSuccess(res, status, result.data, result.meta);
  else if (result instanceof TextReply) sendText(res, status, result.text);
  else sendSuccess(res, status, result);
}

/** The declared headers as received, under their declared names (Node keys them in lower case); undefined when absent. */
function declaredHeaders(req: IncomingMessage, schema: NonNullable<EndpointDeclaration['headers']>): Record<string, unknown> {
  return Object.fromEntries(Object.keys(schema.entries).map((name) => [name, req.headers[name.toLowerCase()]]));
}
