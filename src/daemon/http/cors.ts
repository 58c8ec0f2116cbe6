import type { IncomingMessage, ServerResponse } from 'node:http';

const ALLOWED_METHODS = 'GET, POST, PUT, PATCH, DELETE';
const ALLOWED_HEADERS = 'authorization, content-type';

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
