import type { IncomingMessage, ServerResponse } from 'node:http';
import { endpoints, type EndpointDeclaration } from '../../contract/endpoints.js';

const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE';
/** The token, the body's type, and every request header a route declares (Idempotency-Key), so that a page on an allowed origin may send them. */
const ALLOWED_HEADERS = [
  ...new Set([
    'authorization',
    'content-type',
    ...(Object.values(endpoints) as EndpointDeclaration[]).flatMap((declaration) => Object.keys(declaration.headers?.entries ?? {}).map((name) => name.toLowerCase())),
  ]),
].join(', ');

/**
 * CORS for the origins the operator allowed (`--cors-origin`), and nothing
 * otherwise: without configuration no CORS header is ever sent, so browsers
 * keep other origins out. Preflights of allowed origins are answered here.
 */
export function applyCors(req: IncomingMessage, res: ServerResponse, allowed: readonly string[]): 'answered' | 'continue' {
  if (allowed.length === 0) return 'continue';
  const origin = req.headers.origin;
  if (!origin || !allowed.includes(origin)) return 'continue';
  res.setHeader('access-control-allow-origin', origin);
  res.setHeader('access-control-allow-credentials', 'true');
  res.setHeader('vary', 'Origin');
  if (req.method !== 'OPTIONS' || !req.headers['access-control-request-method']) return 'continue';
  res.writeHead(204, {
    'access-control-allow-methods': ALLOWED_METHODS,
    'access-control-allow-headers': ALLOWED_HEADERS,
    'access-control-max-age': '600',
  });
  res.end();
  return 'answered';
}
