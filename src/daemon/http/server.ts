import { createServer, STATUS_CODES, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { toNodeListener, type App } from 'h3';
import type { DaemonConfig } from '../config.js';
import { DomainError, describeFault, StartupError } from '../errors.js';
import { sendDomainError, sendEnvelope } from './envelope.js';
import { applyCors } from './cors.js';
import { hostCheck } from './hosts.js';
import { abandonAnswer, IDLE_SINCE, ObservedRequest, ObservedResponse, type RequestObserver, type ServerSocket } from './observe.js';

type ObservedServer = Server<typeof ObservedRequest, typeof ObservedResponse>;

export interface HttpServer {
  url: string;
  port: number;
  server: ObservedServer;
  /**
   * The daemon is fully started: requests reach the app from now on. Until
   * then the health routes answer 503 `{status: "starting"}` and every other
   * request 503 UNAVAILABLE with Retry-After.
   */
  started(): void;
  /** Stops accepting, lets in-flight requests finish (up to graceMs), then closes every connection. */
  close(graceMs: number): Promise<void>;
}

const HEALTH_ROUTES = new Set(['/api/health', '/api/health/ready']);

export async function startHttpServer(
  app: App,
  options: Pick<DaemonConfig, 'host' | 'port' | 'corsOrigins' | 'allowedHosts' | 'connections'>,
  observer: RequestObserver,
): Promise<HttpServer> {
  const handle = toNodeListener(app);
  let starting = true;
  let draining = false;
  // Known once listening: it depends on the address the host name resolved to.
  let hostAccepted: ((host: string | undefined) => boolean) | null = null;

  const { headersTimeoutMs, requestTimeoutMs, unreadAnswerTimeoutMs, maxTotal, maxPerClient } = options.connections;
  const idle = new IdleConnections(headersTimeoutMs);

  // A shared listener rather than a closure (and a once wrapper) per request.
  function finished(this: ObservedResponse) {
    observer.finished(this.req, this.delivered || this.undeliveredStatus === null ? this.statusCode : this.undeliveredStatus);
  }

  const listener = (req: ObservedRequest, res: ObservedResponse) => {
    observer.started(req);
    res.on('close', finished);
    if (draining) {
      res.setHeader('connection', 'close');
      sendEnvelope(res, 503, { code: 'UNAVAILABLE', message: 'the daemon is shutting down', data: null, meta: null });
      return;
    }
    if (hostAccepted && !hostAccepted(req.headers.host)) {
      const message = 'this daemon does not answer for the host this request names (see --allowed-hosts)';
      sendDomainError(res, new DomainError('MISDIRECTED_REQUEST', message));
      return;
    }
    if (starting) {
      answerStarting(req, res);
      return;
    }
    if (applyCors(req, res, options.corsOrigins) === 'answered') return;
    void handle(req, res);
  };

  const checkEveryMs = Math.ceil(headersTimeoutMs / 10);
  const server = createServer(
    {
      // A slowloris is cut once its headers or its whole request take longer than these.
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      // Advertised to clients (Keep-Alive: timeout=5): never beyond the idle deadline of IdleConnections below,
      // or a client would reuse a connection the daemon is closing.
      keepAliveTimeout: Math.min(5_000, headersTimeoutMs),
      // Node checks the two timeouts above only this often: every 30 s unless told, which let a slow client overrun them by as much.
      connectionsCheckingInterval: checkEveryMs,
      IncomingMessage: ObservedRequest,
      ServerResponse: ObservedResponse,
    },
    listener,
  );
  // Over the cap, Node closes a new connection as soon as it is accepted.
  server.maxConnections = maxTotal;
  limitConnectionsPerClient(server, maxPerClient);
  server.on('clientError', answerClientError);
  // The socket's own inactivity timer: it runs while the connection neither reads a byte nor hands one to the client.
  server.timeout = unreadAnswerTimeoutMs;
  server.on('timeout', abandonUnreadAnswer);
  idle.watch(server, checkEveryMs);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port, options.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (error) {
    throw new StartupError(listenFailure(error, options.host, options.port));
  }

  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  hostAccepted = hostCheck(typeof address === 'object' && address ? address.address : options.host, options.allowedHosts);
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;

  return {
    url: `http://${host}:${port}`,
    port,
    server,
    started() {
      starting = false;
    },
    async close(graceMs) {
      draining = true;
      idle.stop();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      const timer = setTimeout(() => server.closeAllConnections(), graceMs);
      await closed;
      clearTimeout(timer);
      server.closeAllConnections();
    },
  };
}

/** While the daemon starts: nothing is served yet, and the caller is told to come back in a second. */
function answerStarting(req: ObservedRequest, res: ObservedResponse): void {
  res.setHeader('retry-after', '1');
  const health = HEALTH_ROUTES.has((req.url ?? '').split('?')[0]!);
  sendEnvelope(res, 503, {
    code: 'UNAVAILABLE',
    message: health ? 'the daemon is starting' : 'the daemon is starting; retry in a second',
    data: health ? { status: 'starting' } : null,
    meta: null,
  });
}

function listenFailure(error: unknown, host: string, port: number): string {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return `port ${port} is in use (choose another with --port or PLATFORM_PORT)`;
  if (code === 'ENOTFOUND' || code === 'EADDRNOTAVAIL' || code === 'EAI_AGAIN') {
    return `cannot listen on ${host}: no such address (--host or PLATFORM_HOST)`;
  }
  if (code === 'EACCES') return `cannot listen on ${host}:${port}: permission denied (ports below 1024 need privileges)`;
  return `cannot listen on ${host}:${port}: ${describeFault(error)}`;
}

/**
 * One client address may hold at most `maxPerClient` connections: further ones
 * are closed as soon as they are accepted, so a single client cannot take the
 * whole `maxConnections` from everyone else. The table holds open connections'
 * addresses only, so it is bounded by `maxConnections`.
 */
function limitConnectionsPerClient(server: ObservedServer, maxPerClient: number): void {
  const openByAddress = new Map<string, number>();
  server.on('connection', (socket: ServerSocket) => {
    const address = socket.remoteAddress ?? '';
    const open = openByAddress.get(address) ?? 0;
    if (open >= maxPerClient) {
      socket.destroy();
      return;
    }
    openByAddress.set(address, open + 1);
    socket.once('close', () => {
      const left = (openByAddress.get(address) ?? 1) - 1;
      if (left === 0) openByAddress.delete(address);
      else openByAddress.set(address, left);
    });
  });
}

/**
 * Between two requests on a kept-alive connection Node's headers limit does
 * not run: it starts with the first byte of a request, and blank lines begin
 * none (a client sending "\r\n" every 300 ms held a connection indefinitely,
 * each byte also putting off the keep-alive timeout). So the next request's
 * headers must be complete within the headers limit of the previous answer:
 * a connection idle for longer is closed, whatever it sends meanwhile. When
 * each connection went idle is kept on it (IDLE_SINCE, see ObservedResponse).
 */
class IdleConnections {
  private readonly open = new Set<ServerSocket>();
  private sweeper: NodeJS.Timeout | null = null;

  constructor(private readonly limitMs: number) {}

  watch(server: ObservedServer, everyMs: number): void {
    server.on('connection', (socket: ServerSocket) => {
      socket[IDLE_SINCE] = 0;
      this.open.add(socket);
      socket.once('close', () => this.open.delete(socket));
    });
    this.sweeper = setInterval(() => this.sweep(), everyMs);
    this.sweeper.unref();
  }

  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
  }

  private sweep(): void {
    const deadline = performance.now() - this.limitMs;
    for (const socket of this.open) {
      const since = socket[IDLE_SINCE];
      if (since !== 0 && since < deadline) socket.destroy();
    }
  }
}

/**
 * Node emits 'timeout' once a connection has neither read a byte nor handed
 * one to the client for the unread-answer limit (progress inside one large
 * write counts too). With bytes of an answer still waiting, the client has
 * stopped reading: the answer is abandoned and the connection closed (without
 * this, a client that stopped reading held its connection indefinitely).
 * Between requests it is an idle kept-alive connection, closed as Node would.
 * Otherwise the daemon itself is still working on the answer: that is no
 * reason to close.
 */
function abandonUnreadAnswer(socket: ServerSocket): void {
  const answer = socket._httpMessage;
  if (!answer) socket.destroy();
  else if (socket.writableLength > 0) abandonAnswer(answer);
}

/** How long a connection answered 408 or 4xx by the parser may stay half-closed before it is closed outright. */
const LINGER_MS = 1_000;

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
function answerClientError(error: NodeJS.ErrnoException, socket: Duplex & { _httpMessage?: ServerResponse | null }): void {
  // An answer already under way cannot be followed by another on the same connection.
  if (error.code === 'ECONNRESET' || !socket.writable || socket._httpMessage?.headersSent) {
    socket.destroy();
    return;
  }
  const [status, code, message] =
    error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'VALIDATION_ERROR', 'the request took too long to arrive']
      : (CLIENT_ERRORS[error.code ?? ''] ?? [400, 'VALIDATION_ERROR', 'the request could not be parsed as HTTP']);
  // A request whose body was too slow has an answer object that will never be sent: its access line says 408.
  if (socket._httpMessage instanceof ObservedResponse) socket._httpMessage.undeliveredStatus = status;
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
  // end() only half-closes: a client that ignores the close (and goes on
  // dribbling) would otherwise keep the connection open indefinitely. The
  // moment's grace lets an ordinary client read the answer before the close.
  const linger = setTimeout(() => socket.destroy(), LINGER_MS);
  linger.unref();
  socket.once('close', () => clearTimeout(linger));
}
