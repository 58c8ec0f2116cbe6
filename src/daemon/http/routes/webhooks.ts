import * as v from 'valibot';
import { DomainError } from '../../errors.js';
import { isPlainObject } from '../../validation.js';
import { headerMap } from '../../webhooks/service.js';
import { parseJson, readRawBody } from '../body.js';
import type { RouteModule } from '../context.js';
import { Reply, TextReply } from '../endpoint.js';

/**
 * POST /api/webhooks/{extensionKey}: no cookie, any content type. The handler
 * is found first (404), then the body is read as raw bytes (413) and must be a
 * JSON object (400); the handler verifies it over exactly those bytes.
 */
const WebhookParams = v.object({ extensionKey: v.string() });

export const webhookRoutes: RouteModule = (routes, { endpoint, services: { webhooks }, config }) => {
  routes.post(
    '/api/webhooks/:extensionKey',
    endpoint({
      access: 'public',
      params: WebhookParams,
      readsOwnBody: true,
      handle: async ({ params, event }) => {
        const handler = webhooks.handlerFor(params.extensionKey);
        const { req, res } = event.node;
        const rawBody = await readRawBody(req, res, config.maxBodyBytes);
        const body = rawBody.length === 0 ? undefined : parseJson(rawBody);
        if (!isPlainObject(body)) {
          throw new DomainError('VALIDATION_ERROR', 'the webhook body must be a JSON object', {
            issues: [{ path: '', message: 'must be a JSON object' }],
          });
        }
        const outcome = await handler({ rawBody, body, headers: headerMap(req.headers) });
        return 'plainText' in outcome ? new TextReply(outcome.plainText) : new Reply(outcome.data, outcome.meta);
      },
    }),
  );
};
