import { DomainError } from '../../errors.js';
import { isPlainObject } from '../../../contract/schemas.js';
import type { WebhookRequestEntry } from '../../webhooks/request-log.js';
import { headerMap } from '../../webhooks/service.js';
import { parseJson, readRawBody } from '../body.js';
import type { HttpContext } from '../context.js';
import { PageReply, Reply, TextReply, type Handlers } from '../endpoint.js';
import { PageBudget } from '../../paging.js';

function parseWebhookBody(rawBody: Buffer): Record<string, unknown> {
  const body = rawBody.length === 0 ? undefined : parseJson(rawBody);
  if (!isPlainObject(body)) {
    throw new DomainError('VALIDATION_ERROR', 'the webhook body must be a JSON object', {
      issues: [{ path: '', message: 'must be a JSON object' }],
    });
  }
  return body;
}

export const webhookRoutes = ({ services: { webhooks }, config }: HttpContext) =>
  ({
    /**
     * No cookie, any content type. The handler is found first (404), then the
     * body is read as raw bytes (413) and must be a JSON object (400); the
     * handler verifies it over exactly those bytes.
     */
    receiveWebhook: async ({ params, event }) => {
      const { req, res } = event.node;
      const outcome = await webhooks.receive(params.extensionKey, {
        headers: headerMap(req.headers),
        readBody: () => readRawBody(req, res, config.maxBodyBytes),
        parseBody: parseWebhookBody,
      });
      return 'plainText' in outcome ? new TextReply(outcome.plainText) : new Reply(outcome.data, outcome.meta);
    },
    listWebhookRequests: async ({ params, query }) => {
      const budget = new PageBudget<WebhookRequestEntry>(config.maxPageBytes);
      const { nextCursor } = await webhooks.requests(params.extensionKey, query, budget);
      return new PageReply(budget, { limit: query.limit, ...(nextCursor ? { nextCursor } : {}) });
    },
  }) satisfies Partial<Handlers>;
