import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { connect, isIP } from 'node:net';
import { Agent } from 'undici';
import { RESPONSE_EXCERPT_BYTES } from './types.js';
import { isNonPublicAddress, PrivateTargetError, publicOnlyLookup } from './targets.js';
import { CREDENTIAL_HEADERS, HeaderRecorder, maskAuthorization, REQUEST_HEADER_BYTES, RESPONSE_HEADER_BYTES } from './recorded-headers.js';

/** A subscriber's answer body is never needed: this much is read at most before the connection is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** A POST whose body (and the headers that depend on it, a signature) is made only once the connection is up. */
export interface LazyPost {
  /** Sent as webhook-id: how `abandon` finds the request, and how its head is told from others (see SEND_HEADERS_CHANNEL). */
  deliveryId: string;
  headers: Record<string, string>;
  body: () => Promise<{ bytes: Buffer; headers: Record<string, string> }>;
  /**
   * Called once the request's headers went out, with every header sent
   * (those the transport adds too, names lowercased, an Authorization
   * header's credentials as `****`, bounded as a record keeps them).
   */
  sent: (headers: Record<string, string>) => void;
}

/** What a subscriber answered: its status, its Retry-After, its headers (bounded as a record keeps them), the start of its body. */
export interface Answer {
  status: number;
  retryAfter: string | null;
  headers: Record<string, string>;
  excerpt: string | null;
}

export interface DeliveryTransport {
  /** Fails with a TimeoutError without a complete answer within the timeout, with the body's error when it could not be made. */
  post(url: string, request: LazyPost): Promise<Answer>;
  /** Ends the request in flight for this delivery (its webhook-id), if any: it fails with a LeaseLostError. */
  abandon(deliveryId: string): void;
  /** Destroys every connection: requests in flight fail at once. */
  close(): void;
}

/**
 * Subscriber URLs whose parts are kept (origin, path, credentials); beyond it
 * the cache starts over. URLs are at most 2,048 characters, so it holds a few
 * MB at most; a URL not kept is parsed again (about a microsecond).
 */
const KNOWN_TARGETS = 1_000;

/**
 * undici announces here every request head it writes (the request line and
 * headers, its own included, but not the content-length that goes with the
 * body): the only place that says exactly what was sent.
 */
const SEND_HEADERS_CHANNEL = 'undici:client:sendHeaders';
/** The webhook-id line of a request head: which delivery it is. */
const WEBHOOK_ID_LINE = /\r\nwebhook-id: ([^\r]*)\r\n/;

interface Target {
  origin: string;
  /** Path and query string. */
  path: string;
  host: string;
  port: number;
  /** From credentials in the URL, sent as HTTP Basic authentication (as node:http sends them). */
  authorization: string | null;
}

/**
 * Outgoing deliveries over undici's keep-alive pools, one per origin (on one
 * core against a local server: about 19 µs of CPU per POST, against 47 for
 * node:http's agent and more for fetch). A request's body, and the signature
 * made from it, is made only once the subscriber is known to take
 * connections: while its pool has a live connection, at once; otherwise after
 * a TCP connection to it succeeded (then closed). So a subscriber that
 * refuses connections costs no payload reads. Answers are drained: only their
 * first 2 KiB are kept (the delivery record's excerpt), and beyond
 * MAX_ANSWER_BYTES the connection is dropped rather than read to the end.
 */
export function createDeliveryTransport(settings: {
  deliveryConcurrency: number;
  deliveryTimeoutMs: number;
  denyPrivateTargets: boolean;
}): DeliveryTransport {
  const { deliveryConcurrency: connections, deliveryTimeoutMs: timeoutMs, denyPrivateTargets } = settings;
  // Checked at every connection (names) and every request (literal addresses, which need no lookup).
  const lookup = denyPrivateTargets ? publicOnlyLookup : undefined;
  const dispatcher = new Agent({ connections, ...(lookup ? { connect: { lookup } } : {}) });
  /** Live connections by origin: a subscriber with one takes connections. */
  const live = new Map<string, number>();
  dispatcher.on('connect', (origin) => {
    const key = originOf(origin);
    live.set(key, (live.get(key) ?? 0) + 1);
  });
  dispatcher.on('disconnect', (origin) => {
    const key = originOf(origin);
    const left = (live.get(key) ?? 1) - 1;
    if (left > 0) live.set(key, left);
    else live.delete(key);
  });
  const targets = new Map<string, Target>();
  const inFlight = new Map<string, Cancellation>();
  /** Requests about to be written, by webhook-id: what hears of their head, and the length of their body. */
  const writing = new Map<string, { sent: LazyPost['sent']; contentLength: number }>();
  // Every undici client of the process announces its heads here: only this transport's deliveries are taken.
  const onHeadSent = (message: unknown) => {
    const head = (message as { headers: string }).headers;
    const deliveryId = WEBHOOK_ID_LINE.exec(head)?.[1];
    const request = deliveryId === undefined ? undefined : writing.get(deliveryId);
    if (!request) return;
    writing.delete(deliveryId!);
    request.sent(headersOfHead(head, request.contentLength));
  };
  subscribe(SEND_HEADERS_CHANNEL, onHeadSent);

  function targetOf(url: string): Target {
    let target = targets.get(url);
    if (target) return target;
    const parsed = new URL(url);
    const credentials = parsed.username !== '' || parsed.password !== '' ? `${decodeURIComponent(parsed.username)}:${decodeURIComponent(parsed.password)}` : null;
    target = {
      origin: parsed.origin,
      path: `${parsed.pathname}${parsed.search}`,
      host: parsed.hostname.replace(/^\[|\]$/g, ''),
      port: Number(parsed.port || (parsed.protocol === 'https:' ? 443 : 80)),
      authorization: credentials === null ? null : `Basic ${Buffer.from(credentials).toString('base64')}`,
    };
    if (targets.size >= KNOWN_TARGETS) targets.clear();
    targets.set(url, target);
    return target;
  }

  /** Resolves once a TCP connection to the target succeeded (and closes it); rejects with the connection's error. */
  function reachable(target: Target, cancellation: Cancellation): Promise<void> {
    return new Promise((resolve, reject) => {
      const socket = connect({ host: target.host, port: target.port, ...(lookup ? { lookup } : {}) });
      cancellation.onCancel = (reason) => socket.destroy(reason);
      socket.once('connect', () => {
        cancellation.onCancel = null;
        socket.destroy();
        resolve();
      });
      socket.once('error', (error) => {
        cancellation.onCancel = null;
        reject(error);
      });
    });
  }

  /**
   * The request and its answer, through undici's dispatch handler rather
   * than its `request` API: the answer is taken as undici parses it, without
   * an AbortController, a body stream or a header object per delivery (14 %
   * less CPU per delivered event, the median of five profiled pairs;
   * docs/decisions.md).
   */
  function exchange(target: Target, headers: Record<string, string>, bytes: Buffer, cancellation: Cancellation): Promise<Answer> {
    return new Promise((resolve, reject) => {
      let status = 0;
      let rawHeaders: Buffer[] = [];
      let size = 0;
      const excerpt: Buffer[] = [];
      let settled = false;
      const answer = () => {
        if (settled) return;
        settled = true;
        cancellation.onCancel = null;
        resolve(answerOf(status, rawHeaders, excerpt));
      };
      const fail = (error: Error) => {
        if (settled) return;
        settled = true;
        cancellation.onCancel = null;
        reject(error);
      };
      // Cancelled while waiting for a connection of the pool: the attempt ends now, and the request is dropped when its turn comes.
      cancellation.onCancel = fail;
      dispatcher.dispatch(
        { origin: target.origin, path: target.path, method: 'POST', headers, body: bytes },
        {
          onConnect(abort) {
            if (cancellation.reason) return abort(cancellation.reason);
            cancellation.onCancel = (reason) => abort(reason);
          },
          onHeaders(statusCode, headers) {
            // 1xx answers are interim: the final one follows.
            if (statusCode < 200) return true;
            // Only 200-599 are answers a delivery can act on (thrown here, undici drops the connection and reports it to onError).
            if (statusCode > 599) throw new Error(`invalid HTTP status ${statusCode}`);
            status = statusCode;
            rawHeaders = headers;
            return true;
          },
          onData(chunk) {
            if (size < RESPONSE_EXCERPT_BYTES) excerpt.push(chunk.subarray(0, RESPONSE_EXCERPT_BYTES - size));
            size += chunk.length;
            if (size > MAX_ANSWER_BYTES) {
              // What came is the answer; the rest is not read (thrown, the connection is dropped).
              answer();
              throw new Error('answer too long: connection dropped');
            }
            return true;
          },
          onComplete: answer,
          onError(error) {
            // Cut short by the subscriber after its status: what came is the answer. Cut by us (a timeout, a lost lease): the caller says why.
            if (status !== 0 && !cancellation.reason) answer();
            else fail(error);
          },
        },
      );
    });
  }

  async function post(url: string, { deliveryId, headers, body, sent }: LazyPost): Promise<Answer> {
    if (!url.startsWith('https:') && !url.startsWith('http:')) throw new TypeError('only http and https URLs are delivered to');
    const target = targetOf(url);
    if (denyPrivateTargets && isIP(target.host) && isNonPublicAddress(target.host)) throw new PrivateTargetError(target.host);
    const cancellation = new Cancellation();
    inFlight.set(deliveryId, cancellation);
    // A plain timer for the whole attempt, connection and answer included.
    const timer = setTimeout(() => cancellation.cancel(new TimeoutError(timeoutMs)), timeoutMs);
    try {
      if (!live.has(target.origin)) await reachable(target, cancellation);
      const made = await body();
      if (cancellation.reason) throw cancellation.reason;
      writing.set(deliveryId, { sent, contentLength: made.bytes.length });
      const all = { ...headers, 'webhook-id': deliveryId, ...made.headers, ...(target.authorization === null ? {} : { authorization: target.authorization }) };
      return await exchange(target, all, made.bytes, cancellation);
    } catch (error) {
      throw cancellation.reason ?? error;
    } finally {
      clearTimeout(timer);
      writing.delete(deliveryId);
      if (inFlight.get(deliveryId) === cancellation) inFlight.delete(deliveryId);
    }
  }

  return {
    post,
    abandon(deliveryId) {
      inFlight.get(deliveryId)?.cancel(new LeaseLostError());
    },
    close() {
      unsubscribe(SEND_HEADERS_CHANNEL, onHeadSent);
      void dispatcher.destroy();
    },
  };
}

/** A request head as undici wrote it, with the content-length it writes with the body: the headers as a record keeps them. */
function headersOfHead(head: string, contentLength: number): Record<string, string> {
  const recorder = new HeaderRecorder(REQUEST_HEADER_BYTES);
  // The first line is the request line; every header line ends with CRLF, the head with an empty line.
  for (let start = head.indexOf('\r\n') + 2, end = head.indexOf('\r\n', start); end > start; start = end + 2, end = head.indexOf('\r\n', start)) {
    const colon = head.indexOf(':', start);
    if (colon <= start || colon > end) continue;
    const name = head.slice(start, colon).toLowerCase();
    const value = head.slice(colon + 1, end).trim();
    if (!recorder.add(name, CREDENTIAL_HEADERS.has(name) ? maskAuthorization(value) : value)) return recorder.headers;
  }
  recorder.add('content-length', String(contentLength));
  return recorder.headers;
}

/** An answer's headers as they came (undici's raw name and value pairs), as a record keeps them. */
function answerHeaders(raw: Buffer[]): Record<string, string> {
  const recorder = new HeaderRecorder(RESPONSE_HEADER_BYTES);
  for (let index = 0; index + 1 < raw.length; index += 2) if (!recorder.add(raw[index]!.toString(), raw[index + 1]!.toString('utf8'))) break;
  return recorder.headers;
}

/** The first Retry-After of an answer's raw headers, or null. */
function retryAfterOf(raw: Buffer[]): string | null {
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index]!;
    if (name.length === 11 && name.toString('latin1').toLowerCase() === 'retry-after') return raw[index + 1]!.toString('utf8');
  }
  return null;
}

/** The answer's status, Retry-After, headers and first bytes. */
function answerOf(status: number, raw: Buffer[], excerpt: Buffer[]): Answer {
  const text = excerpt.length === 0 || NULL_BODY_STATUSES.has(status) ? '' : Buffer.concat(excerpt).toString('utf8');
  return { status, retryAfter: retryAfterOf(raw), headers: answerHeaders(raw), excerpt: text === '' ? null : text };
}

/**
 * What ends an attempt early (its timeout, a lost lease): the first reason
 * is kept, and whatever the attempt is waiting on at that moment (a test
 * connection, a place in the pool, the request) is ended with it.
 */
class Cancellation {
  reason: Error | null = null;
  onCancel: ((reason: Error) => void) | null = null;

  cancel(reason: Error): void {
    if (this.reason) return;
    this.reason = reason;
    this.onCancel?.(reason);
  }
}

const originOf = (origin: string | URL) => (typeof origin === 'string' ? new URL(origin).origin : origin.origin);

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

/** The daemon lost the delivery's lease mid-attempt: another daemon may attempt it now. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  constructor() {
    super('the delivery lease was lost');
  }
}

export class TimeoutError extends Error {
  override name = 'TimeoutError';
  constructor(timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
  }
}
