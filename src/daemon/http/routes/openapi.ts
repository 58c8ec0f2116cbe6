import type { ServerResponse } from 'node:http';
import { MANIFEST_JSON_SCHEMA } from '../../../contract/manifest.js';
import { openApiDocument } from '../openapi.js';
import type { HttpContext } from '../context.js';
import { sessionCookieName, type Handlers } from '../endpoint.js';

/** A JSON document served as it is, not in the envelope: tools read it by its URL. */
function sendDocument(res: ServerResponse, contentType: string, json: string): void {
  res.writeHead(200, {
    'content-type': `${contentType}; charset=utf-8`,
    'content-length': Buffer.byteLength(json),
    'cache-control': 'no-cache',
    'x-content-type-options': 'nosniff',
  });
  res.end(json);
}

/** The API document (generated once, on first request) and the JSON Schema of extension manifests. */
export const openApiRoutes = ({ config }: HttpContext) => {
  let json: string | null = null;
  const manifestSchema = JSON.stringify(MANIFEST_JSON_SCHEMA);
  return {
    getOpenApi: ({ event }) => {
      json ??= JSON.stringify(openApiDocument(sessionCookieName(config.secureCookies)));
      sendDocument(event.node.res, 'application/json', json);
    },
    getManifestSchema: ({ event }) => sendDocument(event.node.res, 'application/schema+json', manifestSchema),
  } satisfies Partial<Handlers>;
};
