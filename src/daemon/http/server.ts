import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { toNodeListener, type App } from 'h3';
import { listen } from 'listhen';
import { describeFault, StartupError } from '../errors.js';
import { sendEnvelope } from './envelope.js';
import { applyCors } from './cors.js';
import type { RequestObserver } from './observe.js';

export interface HttpServer {
  url: string;
  port: number;
  server: Server;
  /** Stops accepting, lets in-flight requests finish (up to graceMs), then closes every connection. */
  close(graceMs: number): Promise<void>;
}

export async function startHttpServer(
  app: App,
  options: { host: string; port: number; corsOrigins: readonly string[] },
  observer: RequestObserver,
): Promise<HttpServer> {
  const handle = toNodeListener(app);
  let draining = false;

  // One shared listener rather than a closure (and a once wrapper) per request.
  function finished(this: ServerResponse) {
    observer.finished(this.req, this.statusCode);
  }

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    observer.started(req, res);
    res.on('close', finished);
    if (draining) {
      res.setHeader('connection', 'close');
      sendEnvelope(res, 503, { code: 'UNAVAILABLE', message: 'the daemon is shutting down', data: null, meta: null });
      return;
    }
    if (applyCors(req, res, options.corsOrigins) === 'answered') return;
    void handle(req, res);
  };

  let listening: Awaited<ReturnType<typeof listen>>;
  try {
    listening = await listen(listener, {
      // listhen reads port 0 as "the default port"; asking for a random one is how to get an ephemeral port.
      port: options.port === 0 ? { port: 0, random: true } : options.port,
      hostname: options.host,
      // Without isProd, listhen silently moves to another port when this one is taken.
      isProd: true,
      showURL: false,
      // listhen's autoClose exits the process on SIGTERM; our own stop does it gracefully.
      autoClose: false,
    });
  } catch (error) {
    throw new StartupError(`cannot listen on ${options.host}:${options.port}: ${describeFault(error)}`);
  }

  const server = listening.server as Server;
  // Slow clients may not hold connections open forever: a slowloris is cut after 10 s.
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;
  server.keepAliveTimeout = 5_000;
  server.on('clientError', answerClientError);
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  return {
    url: `http://${host}:${port}`,
    port,
    server,
    async close(graceMs) {
      draining = true;
      const closed = listening.close();
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
      server.closeAllConnections();
    },
  };
}

/** What Node's own parser refuses, in the contract's envelope rather than a bare status line. */
const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [431, 'VALIDATION_ERROR', 'the request line or headers are too large'],
  HPE_URI_TOO_LONG: [414, 'VALIDATION_ERROR', 'the URL is too long'],
};

/**
 * Malformed requests (a broken request line or header, headers over 16 KiB)
 * never reach h3: Node answers them itself, by default with a bare status line
 * and no body. This answers them with the envelope, and closes the connection.
 */
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'VALIDATION_ERROR', 'the request took too long to arrive']
      : (CLIENT_ERRORS[error.code ?? ''] ?? [400, 'VALIDATION_ERROR', 'the request could not be parsed as HTTP']);
  const body = JSON.stringify({ code, message, data: null, meta: null, timestamp: new Date().toISOString() });
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n` +
      'content-type: application/json; charset=utf-8\r\n' +
      'x-content-type-options: nosniff\r\n' +
      'cache-control: no-store\r\n' +
      `content-length: ${Buffer.byteLength(body)}\r\n` +
      'connection: close\r\n\r\n' +
      body,
  );
}
