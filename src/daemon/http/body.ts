import type { IncomingMessage, ServerResponse } from 'node:http';
import { DomainError } from '../errors.js';
import { findJsonProblem, MAX_JSON_DEPTH, nestsTooDeep } from './json-scan.js';

export interface RequestBody {
  /** Exactly the bytes received. */
  raw: Buffer;
  /** The parsed JSON value, or undefined when the request had no body. */
  json: unknown;
}

const NO_BODY: RequestBody = { raw: Buffer.alloc(0), json: undefined };
/** ignoreBOM keeps a leading byte order mark in the text, where JSON.parse refuses it (the decoder would drop it). */
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
/** Keys and paths in messages are cut to this many characters: an answer never echoes a huge key back. */
const MAX_ECHOED = 100;

/** After a 413 the rest of an upload is read and dropped for this long, so the client sees the answer. */
const DISCARD_MS = 2000;

/** The client went away before its body arrived in full: a client's doing, not a fault, and not worth a stack trace. */
export class ClientGoneError extends Error {
  override name = 'ClientGoneError';
}

export const hasBody = (req: IncomingMessage) =>
  req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] ?? '0') !== '0';

/**
 * `application/json`, with no charset or `charset=utf-8` (any case, quoted or
 * not): bodies are always decoded as UTF-8, so a body declared in another
 * charset would be read as something its sender did not mean.
 */
export function isJsonContentType(value: string | undefined): boolean {
  if (!value) return false;
  const [mediaType = '', ...parameters] = value.split(';');
  if (mediaType.trim().toLowerCase() !== 'application/json') return false;
  return parameters.every((parameter) => {
    const [name = '', charset = ''] = parameter.split('=', 2).map((part) => part.trim().toLowerCase());
    return name !== 'charset' || charset.replace(/^"(.*)"$/, '$1') === 'utf-8';
  });
}

/**
 * Reads the body up to `maxBytes` while streaming: an oversized upload is
 * answered 413 as soon as the limit is crossed, never buffered whole.
 */
export function readRawBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<Buffer> {
  // Gone while the route was busy before reading (authentication): no event would ever settle the promise.
  if (req.destroyed) return Promise.reject(new ClientGoneError('the client disconnected before its request body arrived'));
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (declared > maxBytes) {
    discardRest(req, res);
    return Promise.reject(tooLarge(maxBytes));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) {
        cleanup();
        chunks.length = 0;
        discardRest(req, res);
        reject(tooLarge(maxBytes));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    };
    // The request stream fails only when its connection does: the client disconnected, or was cut off as too slow.
    const onError = () => {
      cleanup();
      reject(new ClientGoneError('the client disconnected before its request body arrived'));
    };
    const cleanup = () => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

/**
 * Reads and parses a JSON body: 415 for another media type or a compressed
 * body (it would otherwise be parsed as it is, and refused as bad UTF-8),
 * 400 INVALID_JSON for bad bytes.
 */
export async function readJsonBody(req: IncomingMessage, res: ServerResponse, maxBytes: number): Promise<RequestBody> {
  if (!hasBody(req)) return NO_BODY;
  if (!isJsonContentType(req.headers['content-type'])) {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'the request body must be sent as Content-Type: application/json, in UTF-8');
  }
  const encoding = req.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'compressed request bodies are not accepted: send JSON without Content-Encoding');
  }
  const raw = await readRawBody(req, res, maxBytes);
  if (raw.length === 0) return NO_BODY;
  return { raw, json: parseJson(raw) };
}

/**
 * UTF-8 JSON without a byte order mark or trailing data, nested at most
 * MAX_JSON_DEPTH levels (checked before JSON.parse spends anything on it), and
 * without what json-scan.ts refuses (duplicate keys, prototype-pollution keys,
 * numbers beyond a double); 400 otherwise.
 */
export function parseJson(raw: Buffer): unknown {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new DomainError('INVALID_JSON', 'the request body is not valid UTF-8');
  }
  if (nestsTooDeep(text)) {
    const message = `arrays and objects may nest at most ${MAX_JSON_DEPTH} levels deep`;
    throw invalidAt('', message, message);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new DomainError('INVALID_JSON', 'the request body is not valid JSON');
  }
  const problem = findJsonProblem(text);
  if (problem === null) return value;
  const where = problem.at ? ` at ${cut(problem.at)}` : '';
  switch (problem.kind) {
    case 'duplicate-key':
      throw new DomainError('INVALID_JSON', `duplicate key ${JSON.stringify(cut(problem.key))} in an object${where}`);
    case 'forbidden-key': {
      const message = `the key ${JSON.stringify(cut(problem.key))} is not accepted`;
      const path = problem.at ? `${problem.at}.${problem.key}` : problem.key;
      throw invalidAt(cut(path), message, `${message}${where}`);
    }
    case 'number-out-of-range': {
      const message = `the number ${cut(problem.number)} is beyond the range of a double`;
      throw invalidAt(cut(problem.at), message, `${message}${where}`);
    }
  }
}

const cut = (text: string) => (text.length > MAX_ECHOED ? `${text.slice(0, MAX_ECHOED)}…` : text);

const invalidAt = (path: string, issue: string, message: string) =>
  new DomainError('VALIDATION_ERROR', message, { issues: [{ path, message: issue }] });

function tooLarge(maxBytes: number): DomainError {
  return new DomainError('PAYLOAD_TOO_LARGE', `the request body is larger than the limit of ${maxBytes} bytes`, {
    limit: maxBytes,
  });
}

/**
 * Drops the rest of an oversized upload without keeping it, then closes the
 * connection. Closing at once would reset the socket while the client is still
 * sending, and most clients would then lose the 413 answer. So the answer does
 * not say `Connection: close` either: with it, Node closes the socket as soon
 * as the answer is written.
 */
function discardRest(req: IncomingMessage, res: ServerResponse): void {
  req.on('data', () => undefined);
  req.resume();
  const timer = setTimeout(() => req.socket.destroy(), DISCARD_MS);
  timer.unref();
  const stop = () => clearTimeout(timer);
  req.socket.once('close', stop);
  // A kept-alive socket serves further requests: leave no listener behind on it per oversized upload.
  req.once('end', () => {
    stop();
    req.socket.off('close', stop);
  });
}
