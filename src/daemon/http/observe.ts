import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';

/** What the server learns about a request on its way: its id, and the route pattern that matched. */
export interface ObservedRequest extends IncomingMessage {
  requestId?: string;
  route?: string;
  startedAt?: number;
}

/** An incoming X-Request-Id is kept when it cannot smuggle anything into a log line or a header. */
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Label of requests no route matched: one value, so that scanners cannot grow the metrics. */
export const UNMATCHED_ROUTE = 'unmatched';

const WEBHOOK_ROUTE = '/api/webhooks/:extensionKey';

function webhookOutcome(status: number): string {
  if (status < 300) return 'accepted';
  if (status === 401) return 'rejected';
  if (status === 404) return 'unknown_extension';
  return status < 500 ? 'invalid' : 'failed';
}

export interface RequestObserver {
  /** At arrival: the request id (kept or made), echoed in the answer's X-Request-Id. */
  started(req: IncomingMessage, res: ServerResponse): void;
  /** When the answer is over (or the connection closed): one access line, the metrics. */
  finished(req: IncomingMessage, status: number): void;
}

/** `counting: false` only for `npm run bench`, which measures what counting costs (PLATFORM_BENCH_METRICS=off). */
export function createRequestObserver(logger: Logger, metrics: Metrics, counting = true): RequestObserver {
  // A random prefix per daemon start and a counter: unique, and cheaper than a UUID per request.
  const prefix = randomBytes(6).toString('hex');
  let issued = 0;
  return {
    started(req: ObservedRequest, res) {
      req.startedAt = performance.now();
      const incoming = req.headers['x-request-id'];
      req.requestId = typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : `${prefix}-${(issued += 1).toString(36)}`;
      res.setHeader('x-request-id', req.requestId);
    },
    finished(req: ObservedRequest, status) {
      const durationMs = performance.now() - (req.startedAt ?? 0);
      const method = req.method ?? '-';
      const route = req.route ?? UNMATCHED_ROUTE;
      if (counting) {
        metrics.httpRequest(method, route, status, durationMs / 1000);
        if (route === WEBHOOK_ROUTE) metrics.webhookRequest(webhookOutcome(status));
      }
      logger.access({ method, route, status, durationMs, requestId: req.requestId ?? '-' });
    },
  };
}
