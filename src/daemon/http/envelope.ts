import type { ServerResponse } from 'node:http';
import { DomainError, RateLimitedError, type ErrorCode } from '../errors.js';
import { statusOf } from '../../contract/errors.js';
import type { ObservedRequest } from './observe.js';
import { isoNow } from '../iso-now.js';

export interface Envelope {
  code: 'SUCCESS' | ErrorCode;
  message: string | null;
  data: unknown;
  meta: Record<string, unknown> | null;
  timestamp: string;
}


/** Headers every response carries. Cache-Control: API answers are per-caller and live. */
function writeCommonHeaders(res: ServerResponse): void {
  res.setHeader('x-content-type-options', 'nosniff');
  res.setHeader('cache-control', 'no-store');
}

export function sendEnvelope(
  res: ServerResponse,
  status: number,
  body: Omit<Envelope, 'timestamp'>,
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  writeCommonHeaders(res);
  if (status === 204) {
    res.statusCode = 204;
    res.end();
    return;
  }
  const json = JSON.stringify({
    code: body.code,
    message: body.message,
    data: body.data === undefined ? null : body.data,
    meta: body.code === 'SUCCESS' ? body.meta : withRequestId(res, body.meta),
    timestamp: isoNow(),
  });
  writeJson(res, status, json);
}

export function sendText(res: ServerResponse, status: number, text: string): void {
  writeBody(res, status, 'text/plain; charset=utf-8', text);
}

/** An error answer names its request, so that an operator can find its access line. */
function withRequestId(res: ServerResponse, meta: Record<string, unknown> | null): Record<string, unknown> | null {
  const requestId = (res.req as ObservedRequest | undefined)?.requestId;
  return requestId === undefined ? meta : { ...meta, requestId };
}

function writeJson(res: ServerResponse, status: number, json: string): void {
  writeBody(res, status, 'application/json; charset=utf-8', json);
}

function writeBody(res: ServerResponse, status: number, contentType: string, body: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  // One writeHead with the fixed headers: cheaper than a setHeader each, on every answer.
  res.writeHead(status, [
    'x-content-type-options', 'nosniff',
    'cache-control', 'no-store',
    'content-type', contentType,
    'content-length', String(Buffer.byteLength(body)),
  ]);
  res.end(body);
}

/**
 * JSON of frozen values, by identity. Domain code hands out frozen objects only
 * when they are immutable all the way down (the catalog's summaries and
 * details), so their serialisation can be reused until they are replaced.
 */
const serialized = new WeakMap<object, string>();

export function toJson(value: unknown): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value ?? null);
  if (Object.isFrozen(value)) {
    let json = serialized.get(value);
    if (json === undefined) {
      json = JSON.stringify(value);
      serialized.set(value, json);
    }
    return json;
  }
  if (Array.isArray(value) && value.every((item) => typeof item === 'object' && item !== null && Object.isFrozen(item))) {
    return `[${value.map(toJson).join(',')}]`;
  }
  return JSON.stringify(value);
}

export function sendSuccess(res: ServerResponse, status: number, data: unknown, meta: Record<string, unknown> | null = null): void {
  const json = `{"code":"SUCCESS","message":null,"data":${toJson(data)},"meta":${toJson(meta)},"timestamp":"${isoNow()}"}`;
  writeJson(res, status, json);
}

/** An answer is written in pieces of about this size, the event loop free for other requests between them. */
const PAGE_PIECE_BYTES = 256 * 1024;

/**
 * A page of a listing (items already serialised, see paging.ts) in the one
 * envelope, written in pieces: other requests are answered between them, and
 * a client that reads slowly is waited for rather than buffered.
 */
export async function sendPage(res: ServerResponse, items: ReadonlyArray<string | Buffer>, itemBytes: number, meta: Record<string, unknown> | null): Promise<void> {
  if (res.headersSent) {
    res.end();
    return;
  }
  const head = '{"code":"SUCCESS","message":null,"data":[';
  const tail = `],"meta":${JSON.stringify(meta)},"timestamp":"${isoNow()}"}`;
  res.writeHead(200, [
    'x-content-type-options', 'nosniff',
    'cache-control', 'no-store',
    'content-type', 'application/json; charset=utf-8',
    'content-length', String(Buffer.byteLength(head) + itemBytes + Buffer.byteLength(tail)),
  ]);
  /** Writes and waits for the response to take more; false once the client is gone. */
  const send = async (chunk: string | Buffer): Promise<boolean> => {
    const flushed = res.write(chunk);
    if (res.destroyed) return false;
    await (flushed ? new Promise((resolve) => setImmediate(resolve)) : drained(res));
    return !res.destroyed;
  };
  // Small items are joined into pieces; an item read as bytes goes as it is, copied nowhere.
  let piece = head;
  for (const [index, item] of items.entries()) {
    if (index > 0) piece += ',';
    if (typeof item !== 'string') {
      if (!(await send(piece)) || !(await send(item))) return;
      piece = '';
      continue;
    }
    piece += item;
    if (piece.length < PAGE_PIECE_BYTES) continue;
    if (!(await send(piece))) return;
    piece = '';
  }
  res.end(piece + tail);
}

/** Resolves when the response can take more, or is closed. */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * The one place where errors become responses. Anything that is not a
 * DomainError is a bug or a fault: the caller gets a generic 500, the details
 * go to the log through `report`.
 */
export function sendError(res: ServerResponse, error: unknown, report: (error: unknown) => void): void {
  if (error instanceof DomainError) {
    sendDomainError(res, error);
    return;
  }
  report(error);
  sendEnvelope(res, 500, { code: 'INTERNAL_ERROR', message: 'internal error', data: null, meta: null });
}

export function sendDomainError(res: ServerResponse, error: DomainError): void {
  if (error instanceof RateLimitedError) res.setHeader('retry-after', String(error.retryAfterSeconds));
  sendEnvelope(res, statusOf(error.code), { code: error.code, message: error.message, data: null, meta: error.meta });
}
