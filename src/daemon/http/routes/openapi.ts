import { openApiDocument } from '../openapi.js';
import type { HttpContext } from '../context.js';
import { sessionCookieName, type Handlers } from '../endpoint.js';

/** The API document, generated once, on first request. */
export const openApiRoutes = ({ config }: HttpContext) => {
  let json: string | null = null;
  return {
    getOpenApi: ({ event }) => {
      json ??= JSON.stringify(openApiDocument(sessionCookieName(config.secureCookies)));
      event.node.res.writeHead(200, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(json),
        'cache-control': 'no-cache',
        'x-content-type-options': 'nosniff',
      });
      event.node.res.end(json);
    },
  } satisfies Partial<Handlers>;
};
