import { randomBytes } from 'node:crypto';
import { IncomingMessage, ServerResponse, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import type { Socket } from 'node:net';
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
 * On a connection the server accepted: when it last finished an answer with
 * none under way (performance.now()), 0 while an answer is under way or before
 * the first. Kept by ObservedResponse as Node binds answers to the connection
 * and lets go of them, so that no request needs a listener or a table entry
 * of its own; read by the server's idle-connection sweep.
 */
export const IDLE_SINCE = Symbol('idleSince');
export type ServerSocket = Socket & { [IDLE_SINCE]: number; _httpMessage?: ServerResponse | null };

/**
 * Echoes the request id in every answer. Added in writeHead rather than with
 * setHeader on arrival: a header set before writeHead sends Node down its slow
 * path (every header of the answer removed and appended again), which cost
 * about 2 % of the catalog detail GET.
 */
export class ObservedResponse extends ServerResponse<ObservedRequest> {
  /** Set when the whole answer was handed to a connection still open (see detachSocket). */
  delivered = false;
  /**
   * The status of the access line and the metrics when the answer was not
   * delivered: 400 for a request the client abandoned (it left before the
   * answer was complete, or stopped reading it), 408 for one cut as too slow;
   * null for a live stream, whose end is the client's leaving.
   */
  undeliveredStatus: number | null = ABANDONED_STATUS;

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

  /** Node binds an answer to its connection when the request arrives (or, pipelined, when the answer before it is over). */
  override assignSocket(socket: Socket): void {
    (socket as ServerSocket)[IDLE_SINCE] = 0;
    super.assignSocket(socket);
  }

  /**
   * Node lets go of the connection right after 'finish', which it emits once
   * the answer was handed over, and also when the connection was destroyed
   * with the answer's last bytes still waiting (their write fails, and the
   * failure is not told): only a connection still open means the answer went
   * out. A pipelined answer waiting for the connection is bound to it next.
   */
  override detachSocket(socket: Socket): void {
    this.delivered = !socket.destroyed;
    (socket as ServerSocket)[IDLE_SINCE] = performance.now();
    super.detachSocket(socket);
  }
}

/** What a request the client abandoned counts as: its status would say it was answered. */
const ABANDONED_STATUS = 400;

/** Gives up on an answer the client does not read: counted as abandoned, and its connection closed. */
export function abandonAnswer(res: ServerResponse): void {
  if (res instanceof ObservedResponse) res.undeliveredStatus = ABANDONED_STATUS;
  res.destroy();
}

/** A live stream ends when its client leaves: that is not an abandoned request. */
export function endsWhenClientLeaves(res: ServerResponse): void {
  if (res instanceof ObservedResponse) res.undeliveredStatus = null;
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
