import { randomBytes } from 'node:crypto';
import { IncomingMessage, ServerResponse, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';

/**
 * What the server learns about a request on its way: its id, and the route
 * pattern that matched. Declared fields rather than properties added to each
 * request, so that every request has the same shape from its construction.
 */
export class ObservedRequest extends IncomingMessage {
  requestId: string | undefined = undefined;
  route: string | undefined = undefined;
  startedAt = 0;
}

/**
 * Echoes the request id in every answer. Added in writeHead rather than with
 * setHeader on arrival: a header set before writeHead sends Node down its slow
 * path (every header of the answer removed and appended again), which cost
 * about 2 % of the catalog detail GET.
 */
export class ObservedResponse extends ServerResponse<ObservedRequest> {
  override writeHead(
    statusCode: number,
    reasonOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    const requestId = this.req.requestId;
    const reason = typeof reasonOrHeaders === 'string' ? reasonOrHeaders : undefined;
    let fields = (reason === undefined ? reasonOrHeaders : headers) as OutgoingHttpHeaders | OutgoingHttpHeader[] | undefined;
    if (requestId !== undefined) {
      if (Array.isArray(fields)) fields = [...fields, 'x-request-id', requestId];
      else this.setHeader('x-request-id', requestId);
    }
    return reason === undefined ? super.writeHead(statusCode, fields) : super.writeHead(statusCode, reason, fields);
  }
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
  /** At arrival: the request id (kept or made), which ObservedResponse echoes in the answer. */
  started(req: ObservedRequest): void;
  /** When the answer is over (or the connection closed): one access line, the metrics. */
  finished(req: ObservedRequest, status: number): void;
}

/** `counting: false` only for `npm run bench`, which measures what counting costs (PLATFORM_BENCH_METRICS=off). */
export function createRequestObserver(logger: Logger, metrics: Metrics, counting = true): RequestObserver {
  // A random prefix per daemon start and a counter: unique, and cheaper than a UUID per request.
  const prefix = `${randomBytes(6).toString('hex')}-`;
  let issued = 0;
  return {
    started(req) {
      req.startedAt = performance.now();
      const incoming = req.headers['x-request-id'];
      req.requestId = typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : prefix + (issued += 1).toString(36);
    },
    finished(req, status) {
      const durationMs = performance.now() - req.startedAt;
      const method = req.method ?? '-';
      const route = req.route ?? UNMATCHED_ROUTE;
      if (counting) {
        metrics.httpRequest(method, route, status, durationMs / 1000);
        if (route === WEBHOOK_ROUTE) metrics.webhookRequest(webhookOutcome(status));
      }
      logger.access(method, route, status, durationMs, req.requestId ?? '-');
    },
  };
}
