import { openApiDocument } from '../openapi.js';
import type { RouteModule } from '../context.js';
import { sessionCookieName } from '../endpoint.js';

/** The API document, generated once on first request: every module has registered its routes by then. */
export const openApiRoutes: RouteModule = (routes, { endpoint, config }) => {
  let json: string | null = null;
  routes.get(
    '/api/openapi.json',
    endpoint({
      access: 'public',
      answers: { contentType: 'application/json', description: 'this OpenAPI 3.1 document (not wrapped in the envelope)' },
      handle: ({ event }) => {
        json ??= JSON.stringify(openApiDocument(routes, sessionCookieName(config.secureCookies)));
        event.node.res.writeHead(200, {
          'content-type': 'application/json; charset=utf-8',
          'content-length': Buffer.byteLength(json),
          'cache-control': 'no-cache',
          'x-content-type-options': 'nosniff',
        });
        event.node.res.end(json);
      },
    }),
  );
};
